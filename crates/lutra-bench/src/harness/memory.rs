//! Memory of big shared-table transactions, counted byte by byte: a global
//! allocator that counts live bytes and their high-water mark ([`Counting`]), and
//! the measurement of one transaction that inserts many keys ([`insert_peak`]).
//!
//! The counts only mean something in a binary that installs [`Counting`] as its
//! global allocator:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: lutra_bench::harness::memory::Counting = lutra_bench::harness::memory::Counting;
//! ```

use lutra_lua::shared::{Key, SharedTable, Stored};
use lutra_stm::Stm;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting the bytes live and their highest value.
pub struct Counting;

// SAFETY: every call is forwarded unchanged to the system allocator; the counters
// only observe the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// What one transaction of many inserts cost.
#[derive(Clone, Copy, Debug)]
pub struct InsertPeak {
    /// Keys inserted.
    pub keys: i64,
    /// Highest live bytes above the start, during the transaction and its commit.
    pub peak: usize,
    /// Live bytes above the start once it committed: the finished table.
    pub table: usize,
    /// Elapsed seconds of the transaction.
    pub seconds: f64,
}

/// Inserts `keys` integer keys into a new shared table in one transaction, on this
/// thread, and measures the live bytes (see the module header: needs [`Counting`]
/// installed). Other threads must not allocate meanwhile.
///
/// # Panics
/// If the table does not end with `keys` entries.
pub fn insert_peak(keys: i64) -> InsertPeak {
    let stm = Stm::default();
    // A first transaction, so the engine's per-thread state exists before measuring.
    stm.atomically(|tx| SharedTable::new().count(tx));
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let started = Instant::now();
    let table = SharedTable::new();
    stm.atomically(|tx| {
        (1..=keys).try_for_each(|i| table.set(tx, Key::Integer(i), Stored::Integer(i)))
    });
    let seconds = started.elapsed().as_secs_f64();
    let measured = InsertPeak {
        keys,
        peak: PEAK.load(Ordering::Relaxed) - base,
        table: LIVE.load(Ordering::Relaxed) - base,
        seconds,
    };
    assert_eq!(stm.atomically(|tx| table.border(tx)), keys);
    measured
}
