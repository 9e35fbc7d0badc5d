//! A transaction that inserts many keys into a shared table costs memory in
//! proportion to what it changes: its peak stays under 4x the finished table.
//!
//! Measured with a counting global allocator (live bytes and their high-water mark)
//! in a test binary of its own with a single test, on one thread: the figures are
//! the engine's and the table's own allocations, independent of timing.

use lutra_lua::shared::{Key, SharedTable, Stored};
use lutra_stm::Stm;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes live and their highest value.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

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

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Keys inserted by the one transaction (1M is measured by `sharedbench`).
const KEYS: i64 = 200_000;

#[test]
fn one_transaction_of_many_inserts_peaks_under_four_times_the_table() {
    let stm = Stm::default();
    // A first transaction, so the engine's per-thread state exists before measuring.
    stm.atomically(|tx| SharedTable::new().count(tx));
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let table = SharedTable::new();
    stm.atomically(|tx| {
        (1..=KEYS).try_for_each(|i| table.set(tx, Key::Integer(i), Stored::Integer(i)))
    });
    let peak = PEAK.load(Ordering::Relaxed) - base;
    let table_bytes = LIVE.load(Ordering::Relaxed) - base;
    assert_eq!(stm.atomically(|tx| table.border(tx)), KEYS);
    println!(
        "{KEYS} inserts in one transaction: peak {peak} B, table {table_bytes} B \
         ({:.0} B/key), peak / table = {:.2}",
        table_bytes as f64 / KEYS as f64,
        peak as f64 / table_bytes as f64
    );
    assert!(
        peak < 4 * table_bytes,
        "peak {peak} B is not under 4x the table's {table_bytes} B"
    );
}
