//! Epoch-based reclamation: memory unlinked by a commit is released only once no
//! transaction that could still read it is running.
//!
//! A descriptor announces the global epoch in its registry slot when an attempt begins
//! and clears it (0, quiescent) when the attempt ends; threads outside transactions
//! are therefore quiescent, and announcing writes only the descriptor's own slot.
//!
//! # Protocol
//! 1. Begin: load the global epoch `e`, store it in the own slot, full fence; only then
//!    read transactional data.
//! 2. Commit: write back, release the records, full fence, then load the global epoch
//!    `r` and retire each unlinked block with `r`.
//! 3. Collect: take the blocks of dropped descriptors (orphans), then scan the slots.
//!    A block retired at `r` is released when every announced epoch is greater than
//!    `r`; the global epoch advances when every announcement has caught up with it.
//!    Only blocks retired before the scan may be judged by it: an orphan retired
//!    after the scan may be in use by a reader that announced after it.
//!
//! # Invariants
//! - A reader that could have loaded a pointer before the commit that unlinked it
//!   announced an epoch `≤ r` and stays announced until its attempt ends.

use crate::global::registry::Registry;
use crate::global::sync::{AtomicU64, Mutex, Ordering, fence, lock};

/// How to give a block back: called with the block's address and size.
pub type Release = unsafe fn(usize, usize);

/// A block waiting to be released.
pub(crate) struct Retired {
    pub(crate) epoch: u64,
    pub(crate) addr: usize,
    pub(crate) size: usize,
    pub(crate) release: Release,
}

impl Retired {
    fn release_now(self) {
        // SAFETY: a block is retired once, by the commit that unlinked it, with the
        // release function that matches its allocation; collection hands it back only
        // when no transaction can still read it.
        unsafe { (self.release)(self.addr, self.size) }
    }
}

/// Blocks retired per descriptor before it tries to collect.
pub(crate) const COLLECT_THRESHOLD: usize = 64;

pub(crate) struct Epochs {
    global: AtomicU64,
    /// Blocks left behind by dropped descriptors.
    orphans: Mutex<Vec<Retired>>,
}

impl Epochs {
    pub(crate) fn new() -> Self {
        Self {
            global: AtomicU64::new(1),
            orphans: Mutex::new(Vec::new()),
        }
    }

    /// Step 1 for a descriptor whose epoch word is `announced` (its registry slot's).
    #[inline]
    pub(crate) fn announce_in(&self, announced: &AtomicU64) {
        let epoch = self.global.load(Ordering::SeqCst);
        announced.store(epoch, Ordering::Relaxed);
        // ORDERING: pairs with the fence in `current_for_retire`; the announcement is
        // visible to collectors before this attempt reads any data.
        fence(Ordering::SeqCst);
    }

    /// Ends the announcement whose epoch word is `announced`.
    #[inline]
    pub(crate) fn quiesce_in(&self, announced: &AtomicU64) {
        announced.store(0, Ordering::Release);
    }

    /// The epoch to retire blocks unlinked by a commit that has just written back.
    pub(crate) fn current_for_retire(&self) -> u64 {
        // ORDERING: pairs with the fence in `announce`: a reader announcing a later
        // epoch sees the unlinking writes.
        fence(Ordering::SeqCst);
        self.global.load(Ordering::SeqCst)
    }

    /// Step 3: releases what `limbo` may release, advancing the epoch if possible.
    pub(crate) fn collect(&self, registry: &Registry, limbo: &mut Vec<Retired>) {
        // The orphans are taken before the scan: a block that a dropped descriptor
        // retired after the scan may be read by a transaction that announced after
        // it, which the scan's `oldest` does not cover.
        if let Ok(mut orphans) = self.orphans.try_lock() {
            limbo.append(&mut orphans);
        }
        let global = self.global.load(Ordering::SeqCst);
        let oldest = registry
            .in_use()
            .map(|(_, shared)| shared.epoch.load(Ordering::SeqCst))
            .filter(|&epoch| epoch != 0)
            .min();
        if oldest.is_none_or(|oldest| oldest >= global) {
            let _ = self.global.compare_exchange(
                global,
                global + 1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
        }
        let safe_below = oldest.unwrap_or(u64::MAX);
        let (ready, waiting): (Vec<_>, Vec<_>) =
            limbo.drain(..).partition(|block| block.epoch < safe_below);
        *limbo = waiting;
        ready.into_iter().for_each(Retired::release_now);
    }

    /// Hands the blocks of a dropped descriptor to whoever collects next.
    pub(crate) fn adopt(&self, limbo: &mut Vec<Retired>) {
        lock(&self.orphans).append(limbo);
    }

    /// Releases everything: only when no transaction can run any more.
    pub(crate) fn release_all(&self) {
        lock(&self.orphans).drain(..).for_each(Retired::release_now);
    }
}

#[cfg(all(test, feature = "shuttle"))]
mod model {
    use super::*;
    use shuttle::sync::atomic::AtomicBool;
    use shuttle::{Runner, scheduler::PctScheduler, thread};
    use std::sync::Arc;

    /// Set when the model's block is released.
    static FREED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    /// # Safety
    /// None needed: records the release only.
    unsafe fn mark_freed(_addr: usize, _size: usize) {
        FREED.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// A collector with nothing of its own, a reader that announces and then uses a
    /// block, and a descriptor that retires that block while the reader runs and is
    /// then dropped (its limbo adopted as orphans): the block must not be released
    /// before the reader is done, whatever the interleaving.
    #[test]
    fn orphans_retired_after_the_scan_wait_for_late_readers() {
        Runner::new(PctScheduler::new(3, 2000), shuttle::Config::new()).run(|| {
            FREED.store(false, std::sync::atomic::Ordering::SeqCst);
            let registry = Arc::new(Registry::new(4));
            let epochs = Arc::new(Epochs::new());
            let (reader, retirer) = (registry.acquire().unwrap(), registry.acquire().unwrap());
            let retired = Arc::new(AtomicBool::new(false));
            let collector = {
                let (registry, epochs) = (registry.clone(), epochs.clone());
                thread::spawn(move || {
                    let mut limbo = Vec::new();
                    epochs.collect(&registry, &mut limbo);
                    epochs.adopt(&mut limbo);
                })
            };
            let reading = {
                let (registry, epochs, retired) =
                    (registry.clone(), epochs.clone(), retired.clone());
                thread::spawn(move || {
                    epochs.announce_in(&registry.get(reader).epoch);
                    // The block was reachable when this attempt began; it is unlinked
                    // (and retired) by another descriptor's commit meanwhile.
                    while !retired.load(Ordering::SeqCst) {
                        thread::yield_now();
                    }
                    assert!(
                        !FREED.load(std::sync::atomic::Ordering::SeqCst),
                        "a block was released while a reader could still use it"
                    );
                    epochs.quiesce_in(&registry.get(reader).epoch);
                })
            };
            // The retirer commits after the reader announced, then is dropped.
            while registry.get(reader).epoch.load(Ordering::SeqCst) == 0 {
                thread::yield_now();
            }
            let epoch = epochs.current_for_retire();
            let mut limbo = vec![Retired {
                epoch,
                addr: 0x1000,
                size: 8,
                release: mark_freed,
            }];
            epochs.adopt(&mut limbo);
            registry.release(retirer);
            retired.store(true, Ordering::SeqCst);
            collector.join().unwrap();
            reading.join().unwrap();
        });
    }
}

/// Weak-memory check of steps 1 and 2 on loom (see `src/sync.rs`; run with `cargo test
/// --release -p lutra-stm --features loom --lib epoch::loom_model`): the block is a
/// loom cell, so loom reports its release racing with a read of it (a use after free)
/// in any execution the memory model allows, not only in those an interleaving shows.
#[cfg(all(test, feature = "loom"))]
mod loom_model {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::atomic::AtomicBool;
    use loom::thread;
    use std::sync::Arc;

    /// The model's block: a loom cell, whose accesses loom checks for races.
    struct Block(UnsafeCell<u64>);

    // SAFETY: every access goes through loom's cell, which reports any two that are
    // not ordered by happens-before: sharing the block is what the model checks.
    unsafe impl Sync for Block {}

    /// Releases the block: overwrites it, as an allocator reusing it would.
    ///
    /// # Safety
    /// `addr` is the address of a live [`Block`].
    unsafe fn poison(addr: usize, _size: usize) {
        // SAFETY: the caller passes a live block; loom checks the write against every
        // read of the block.
        let block = unsafe { &*(addr as *const Block) };
        // SAFETY: as above: loom reports a concurrent access instead of allowing it.
        block.0.with_mut(|value| unsafe { *value = 0 });
    }

    /// A reader announces its epoch, then follows a link to a block and reads it; a
    /// committer unlinks the block, retires it at the epoch `current_for_retire`
    /// gives, and collects at once, as a descriptor whose limbo list is full does.
    #[test]
    fn a_retired_block_outlives_every_reader_that_could_reach_it() {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound.get_or_insert(3);
        builder.check(|| {
            let registry = Arc::new(Registry::new(2));
            let epochs = Arc::new(Epochs::new());
            let block = Arc::new(Block(UnsafeCell::new(42)));
            let linked = Arc::new(AtomicBool::new(true));
            let (reader, committer) = (registry.acquire().unwrap(), registry.acquire().unwrap());
            let reading = {
                let (registry, epochs) = (registry.clone(), epochs.clone());
                let (block, linked) = (block.clone(), linked.clone());
                thread::spawn(move || {
                    epochs.announce_in(&registry.get(reader).epoch);
                    if linked.load(Ordering::Relaxed) {
                        // SAFETY: read through loom's cell, which checks it against
                        // the release.
                        let value = block.0.with(|value| unsafe { *value });
                        assert_eq!(value, 42, "a reader saw a released block");
                    }
                    epochs.quiesce_in(&registry.get(reader).epoch);
                })
            };
            linked.store(false, Ordering::Relaxed);
            let epoch = epochs.current_for_retire();
            let mut limbo = vec![Retired {
                epoch,
                addr: Arc::as_ptr(&block) as usize,
                size: 8,
                release: poison,
            }];
            epochs.collect(&registry, &mut limbo);
            reading.join().unwrap();
            epochs.collect(&registry, &mut limbo);
            assert!(limbo.is_empty(), "the block was never released");
            registry.release(reader);
            registry.release(committer);
        });
    }
}
