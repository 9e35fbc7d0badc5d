//! Transactional allocation and deferred freeing.
//!
//! - `Transaction::alloc`: memory allocated by attempts that abort (explicitly, by
//!   conflicts, or in an `or_else` branch that retries) is released; only committed
//!   allocations stay live, and `Transaction::free` releases them once the engine is
//!   done with them (a counting global allocator watches blocks of unusual sizes).
//! - `TxDescriptor::record_allocation`: rollback, and a commit that fails validation,
//!   hand every recorded block to its release function exactly once; a commit hands
//!   back none.
//! - `TxDescriptor::free_on_commit`: an aborted attempt frees nothing; a committed free
//!   is not released while an attempt that began before the commit is still running,
//!   even when collection runs; after `Stm::quiesce` has waited for that attempt, the
//!   next collection releases it; what is left is released when the engine is dropped;
//!   every block exactly once (release functions count by address; blocks are never
//!   reused).

mod common;

use common::{CountingParking, within};
use lutra_stm::{AbortReason, Config, DesignKind, Stm, TVar, TxDescriptor, TxOptions};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// Block sizes the counting allocator watches, one per test.
const WATCHED: [usize; 3] = [1_001, 1_002, 1_003];

struct CountingAllocator;

static LIVE: [AtomicIsize; 3] = [
    AtomicIsize::new(0),
    AtomicIsize::new(0),
    AtomicIsize::new(0),
];

fn watched(layout: Layout) -> Option<&'static AtomicIsize> {
    WATCHED
        .iter()
        .position(|&size| size == layout.size())
        .map(|at| &LIVE[at])
}

// SAFETY: forwards every call to the system allocator unchanged; the counting has no
// effect on the memory handed out.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if let Some(live) = watched(layout) {
            live.fetch_add(1, Ordering::SeqCst);
        }
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(live) = watched(layout) {
            live.fetch_sub(1, Ordering::SeqCst);
        }
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn live(size: usize) -> isize {
    LIVE[WATCHED.iter().position(|&s| s == size).unwrap()].load(Ordering::SeqCst)
}

/// A pointer handed between threads.
#[derive(Clone, Copy)]
struct Block(std::ptr::NonNull<u8>);
// SAFETY: the block is plain memory owned by the test.
unsafe impl Send for Block {}

#[test]
fn aborted_attempts_release_what_they_allocated() {
    const SIZE: usize = 1_001;
    let layout = Layout::from_size_align(SIZE, 8).unwrap();
    within(Duration::from_secs(60), "transactional alloc", move || {
        for design in DesignKind::ALL {
            // Everything runs on threads that end, so that no descriptor outlives the
            // engine and `drop` below ends it.
            let stm = Stm::new(Config::default().with_design(design));
            let counter = Arc::new(TVar::new(0u64));
            let workers: Vec<_> = (0..8)
                .map(|_| {
                    let (stm, counter) = (stm.clone(), counter.clone());
                    std::thread::spawn(move || {
                        (0..50)
                            .map(|round| {
                                stm.atomically(|tx| {
                                    let block = tx.alloc(layout)?;
                                    tx.modify(&counter, |n| n + 1)?;
                                    if round % 5 == 0 && tx.aborts_so_far() < 2 {
                                        return tx.abort();
                                    }
                                    Ok(Block(block))
                                })
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            let blocks: Vec<Block> = workers
                .into_iter()
                .flat_map(|w| w.join().unwrap())
                .collect();
            assert_eq!(blocks.len(), 400);
            assert!(stm.stats().total.total_aborts() >= 8 * 10 * 2);
            assert_eq!(
                live(SIZE),
                400,
                "{design:?}: aborted attempts leaked their blocks"
            );
            let freer = {
                let stm = stm.clone();
                std::thread::spawn(move || {
                    for block in blocks {
                        // SAFETY: each block came from `alloc` with this layout in a
                        // committed transaction, and is freed once.
                        stm.atomically(|tx| unsafe { tx.free(block.0, layout) });
                    }
                })
            };
            freer.join().unwrap();
            drop((stm, counter));
            assert_eq!(
                live(SIZE),
                0,
                "{design:?}: freed blocks were never released"
            );
        }
    });
}

#[test]
fn a_retried_or_else_branch_releases_its_allocation() {
    const SIZE: usize = 1_002;
    let layout = Layout::from_size_align(SIZE, 16).unwrap();
    for design in DesignKind::ALL {
        let stm = Stm::new(Config::default().with_design(design));
        let flag = TVar::new(0u8);
        let branch = stm.atomically(|tx| {
            tx.or_else(
                |tx| {
                    tx.alloc(layout)?;
                    tx.alloc(layout)?;
                    tx.read(&flag)?;
                    tx.retry()
                },
                |tx| {
                    assert_eq!(live(SIZE), 0, "the retried branch's blocks are still live");
                    tx.write(&flag, 1).map(|()| "second")
                },
            )
        });
        assert_eq!(branch, "second");
        assert_eq!(live(SIZE), 0, "{design:?}");
    }
}

/// Releases recorded by the counting release function: address → times released.
static RELEASED: Mutex<Option<HashMap<usize, u32>>> = Mutex::new(None);

fn new_block() -> usize {
    Box::into_raw(Box::new([0usize; 4])) as usize
}

/// Counts the release. The block stays allocated (leaked), so that no later block can
/// reuse its address and inherit its count.
unsafe fn release_block(addr: usize, size: usize) {
    assert_eq!(size, 32);
    *RELEASED
        .lock()
        .unwrap()
        .get_or_insert_with(HashMap::new)
        .entry(addr)
        .or_default() += 1;
}

fn times_released(addr: usize) -> u32 {
    RELEASED
        .lock()
        .unwrap()
        .as_ref()
        .and_then(|released| released.get(&addr).copied())
        .unwrap_or(0)
}

#[test]
fn recorded_allocations_are_released_exactly_when_attempts_abort() {
    for design in DesignKind::ALL {
        let stm = Stm::new(Config::default().with_design(design));
        let mut desc = TxDescriptor::new(&stm).unwrap();
        let word = TVar::new(0usize);

        // Rollback releases every block of the attempt, once.
        desc.begin(TxOptions::default());
        let rolled: Vec<usize> = (0..3).map(|_| new_block()).collect();
        rolled
            .iter()
            .for_each(|&b| desc.record_allocation(b, 32, release_block));
        desc.rollback(AbortReason::Explicit);
        assert!(rolled.iter().all(|&b| times_released(b) == 1), "{design:?}");

        // A doomed attempt's commit fails and releases.
        desc.begin(TxOptions::default());
        let doomed = new_block();
        desc.record_allocation(doomed, 32, release_block);
        desc.doom(AbortReason::Explicit);
        assert!(desc.commit().is_err());
        assert_eq!(times_released(doomed), 1);

        // A commit that fails validation releases.
        desc.begin(TxOptions::default());
        let invalid = new_block();
        desc.record_allocation(invalid, 32, release_block);
        // SAFETY: the word of a `TVar<usize>` is an aligned word that outlives the
        // transaction and is only written by transactions.
        unsafe {
            let seen = desc.load(word.as_word_ptr()).unwrap();
            let writer = {
                let stm = stm.clone();
                let addr = word.as_word_ptr() as usize;
                std::thread::spawn(move || {
                    let mut other = TxDescriptor::new(&stm).unwrap();
                    other.begin(TxOptions::default());
                    other.store(addr as *mut usize, 99, usize::MAX).unwrap();
                    other.commit().unwrap();
                })
            };
            writer.join().unwrap();
            // Encounter-time locking finds the conflict here, commit-time locking at
            // commit: either way the attempt is doomed.
            let _ = desc.store(word.as_word_ptr() as *mut usize, seen + 1, usize::MAX);
        }
        assert_eq!(desc.commit().unwrap_err().reason(), AbortReason::Validation);
        assert_eq!(times_released(invalid), 1);

        // A commit keeps the block.
        desc.begin(TxOptions::default());
        let kept = new_block();
        desc.record_allocation(kept, 32, release_block);
        desc.commit().unwrap();
        assert_eq!(
            times_released(kept),
            0,
            "{design:?}: a committed allocation was released"
        );
    }
}

#[test]
fn committed_frees_wait_for_running_attempts() {
    within(Duration::from_secs(30), "free_on_commit", || {
        let parking = Arc::new(CountingParking::default());
        let stm = Stm::new(Config::default().with_parking(parking.clone()));
        let mut desc = TxDescriptor::new(&stm).unwrap();

        // An aborted attempt frees nothing.
        let survivor = new_block();
        desc.begin(TxOptions::default());
        // SAFETY: the block is ours, 32 bytes, word-aligned, freed at most once.
        unsafe { desc.free_on_commit(survivor, 32, release_block).unwrap() };
        desc.rollback(AbortReason::Explicit);
        assert_eq!(times_released(survivor), 0, "an aborted free was released");

        // An attempt that begins before the frees commit, and runs until told to end.
        let (begun_tx, begun_rx) = mpsc::channel();
        let (end_tx, end_rx) = mpsc::channel::<()>();
        // Set just before the reader is told to end its attempt: the attempt cannot
        // end while this is still false.
        let told_to_end = Arc::new(AtomicBool::new(false));
        let reader = {
            let stm = stm.clone();
            std::thread::spawn(move || {
                let mut other = TxDescriptor::new(&stm).unwrap();
                other.begin(TxOptions::default());
                begun_tx.send(()).unwrap();
                end_rx.recv().unwrap();
                other.commit().unwrap();
            })
        };
        begun_rx.recv().unwrap();
        // Enough committed frees to make the committing descriptor collect.
        let mut blocks = vec![survivor];
        blocks.extend((0..100).map(|_| new_block()));
        for &block in &blocks {
            desc.begin(TxOptions::default());
            // SAFETY: as above.
            unsafe { desc.free_on_commit(block, 32, release_block).unwrap() };
            desc.commit().unwrap();
        }
        assert!(
            blocks.iter().all(|&b| times_released(b) == 0),
            "a block was released while an older attempt was still running"
        );

        // `quiesce` waits for the older attempt: the reader ends it only once the
        // quiescing thread provably waits (its wait loop yields through the parking).
        let quiescer = {
            let (stm, told_to_end) = (stm.clone(), told_to_end.clone());
            std::thread::spawn(move || {
                stm.quiesce();
                assert!(
                    told_to_end.load(Ordering::SeqCst),
                    "quiesce returned while the older attempt was still running"
                );
            })
        };
        while parking.yields() == 0 && !quiescer.is_finished() {
            std::thread::yield_now();
        }
        told_to_end.store(true, Ordering::SeqCst);
        end_tx.send(()).unwrap();
        quiescer.join().unwrap();
        reader.join().unwrap();

        // The next collection releases everything retired so far.
        let last = new_block();
        desc.begin(TxOptions::default());
        // SAFETY: as above.
        unsafe { desc.free_on_commit(last, 32, release_block).unwrap() };
        desc.commit().unwrap();
        assert!(
            blocks.iter().all(|&b| times_released(b) == 1),
            "committed frees were not released once no attempt could read them"
        );
        drop(desc);
        drop(stm);
        assert_eq!(
            times_released(last),
            1,
            "the engine's drop lost a retired block"
        );
    });
}

/// Gives nothing back: the test's page is unmapped by the test itself.
///
/// # Safety
/// None needed: does nothing.
unsafe fn keep_page(_addr: usize, _size: usize) {}

/// Words written unchanged (a freed range: `write_unchanged`, `free_on_commit`) have
/// their records locked and their versions moved, so that an attempt that read them
/// fails its validation, but a commit stores nothing into them, on the straight
/// commit and on the general one, under every design: the words lie in a read-only
/// page, where a store would fault.
#[test]
fn a_commit_stores_nothing_into_words_written_unchanged() {
    const PAGE: usize = 4096;
    // SAFETY: a fresh anonymous private mapping, checked below.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(page, libc::MAP_FAILED);
    let words = page.cast::<usize>();
    // SAFETY: the first two words of the writable page.
    unsafe {
        words.write(7);
        words.add(1).write(8);
    }
    // SAFETY: the page mapped above.
    assert_eq!(unsafe { libc::mprotect(page, PAGE, libc::PROT_READ) }, 0);
    for design in DesignKind::ALL {
        let stm = Stm::new(Config::default().with_design(design).with_stats(false));
        let mut reader = TxDescriptor::new(&stm).unwrap();
        let mut writer = TxDescriptor::new(&stm).unwrap();
        let mut cell = Box::new(0usize);
        let elsewhere: *mut usize = &mut *cell;
        for freeing in [false, true] {
            reader.begin(TxOptions::default());
            // SAFETY: a word of the page, readable.
            assert_eq!(unsafe { reader.load(words) }.unwrap(), 7);
            writer.begin(TxOptions::default());
            if freeing {
                // SAFETY: the page's first two words; `keep_page` releases nothing.
                unsafe { writer.free_on_commit(words as usize, 16, keep_page) }.unwrap();
            } else {
                // SAFETY: as above.
                unsafe { writer.write_unchanged(words as usize, 16) }.unwrap();
            }
            writer.commit().unwrap();
            // SAFETY: as above.
            assert_eq!(unsafe { (words.read(), words.add(1).read()) }, (7, 8));
            // The reader writes, so its commit validates what it read.
            // SAFETY: the boxed word, live for the whole test.
            let write = unsafe { reader.store(elsewhere, 1, usize::MAX) };
            let outcome = write.and_then(|()| reader.commit());
            assert!(
                outcome.is_err(),
                "{design:?}, freeing {freeing}: the unchanged write moved no version"
            );
        }
    }
    // SAFETY: the page mapped above, no longer used.
    assert_eq!(unsafe { libc::munmap(page, PAGE) }, 0);
}
