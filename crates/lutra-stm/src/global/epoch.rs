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
//!    after the scan may be in use by a reader that announced after it. A list keeps
//!    a lower bound of its blocks' epochs (its floor): a scan that finds an attempt
//!    announced at or below the floor releases nothing and leaves the list as it is
//!    without a look at each block.
//!
//! # Invariants
//! - A reader that could have loaded a pointer before the commit that unlinked it
//!   announced an epoch `≤ r` and stays announced until its attempt ends.

use crate::global::registry::Registry;
use crate::global::sync::{AtomicBool, AtomicU64, Mutex, Ordering, fence, lock};

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
    /// Gives the block back; its entry is dropped right after.
    fn release_now(&self) {
        // SAFETY: a block is retired once, by the commit that unlinked it, with the
        // release function that matches its allocation; collection hands it back only
        // when no transaction can still read it.
        unsafe { (self.release)(self.addr, self.size) }
    }
}

/// Blocks retired per descriptor before it tries to collect. Small, so that blocks
/// go back to the C library a few at a time, soon after their free, while its
/// per-thread cache has room for them and their lines are still warm: with 64, a
/// batch of freed blocks overflowed glibc's thread cache (7 blocks of a size), and
/// half the hash set's `malloc` calls took `_int_malloc` (`docs/performance.md`).
/// A collection reads every registry slot, so it is not tried at every commit.
pub(crate) const COLLECT_THRESHOLD: usize = 4;

/// A descriptor's blocks waiting to be released, and a lower bound of their epochs.
///
/// # Invariants
/// Every block's epoch is at least `floor`; `floor` is `u64::MAX` when the list is
/// empty. If `sorted`, the epochs never decrease along the list (a descriptor
/// retires at the epochs `current_for_retire` gives, which never decrease; only
/// orphans may come out of order), and `floor` is the first block's.
pub(crate) struct Limbo {
    blocks: Vec<Retired>,
    floor: u64,
    sorted: bool,
    /// Looks through the blocks so far, for the tests.
    #[cfg(test)]
    pub(crate) passes: usize,
}

impl Default for Limbo {
    fn default() -> Self {
        Self {
            blocks: Vec::new(),
            floor: u64::MAX,
            sorted: true,
            #[cfg(test)]
            passes: 0,
        }
    }
}

impl Limbo {
    /// How many blocks wait.
    pub(crate) fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether no block waits.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Adds `block`.
    pub(crate) fn push(&mut self, block: Retired) {
        if self
            .blocks
            .last()
            .is_some_and(|last| last.epoch > block.epoch)
        {
            self.sorted = false;
        }
        self.floor = self.floor.min(block.epoch);
        self.blocks.push(block);
    }

    /// Moves every block of `blocks` here.
    fn append(&mut self, blocks: &mut Vec<Retired>) {
        blocks.drain(..).for_each(|block| self.push(block));
    }

    /// Releases every block retired before `safe_below`, keeping the others in order:
    /// nothing to do below the floor; in a sorted list, the blocks released are a
    /// prefix; otherwise one pass over the list.
    fn release_below(&mut self, safe_below: u64) {
        if self.floor >= safe_below {
            return;
        }
        if self.sorted {
            let ready = self
                .blocks
                .partition_point(|block| block.epoch < safe_below);
            self.blocks
                .drain(..ready)
                .for_each(|block| block.release_now());
            self.floor = self.blocks.first().map_or(u64::MAX, |block| block.epoch);
        } else {
            #[cfg(test)]
            {
                self.passes += 1;
            }
            let mut floor = u64::MAX;
            self.blocks.retain(|block| {
                let ready = block.epoch < safe_below;
                if ready {
                    block.release_now();
                } else {
                    floor = floor.min(block.epoch);
                }
                !ready
            });
            self.floor = floor;
        }
        if self.blocks.is_empty() {
            self.sorted = true;
        }
    }
}

impl Extend<Retired> for Limbo {
    fn extend<I: IntoIterator<Item = Retired>>(&mut self, blocks: I) {
        blocks.into_iter().for_each(|block| self.push(block));
    }
}

pub(crate) struct Epochs {
    global: AtomicU64,
    /// Blocks left behind by dropped descriptors.
    orphans: Mutex<Vec<Retired>>,
    /// Whether `orphans` may hold a block: set under its lock by `adopt`, cleared
    /// under it by the collection that takes them, read without it, so that a
    /// collection with no orphans to take writes no shared line for them (a
    /// `try_lock` is a compare-and-swap on the lock's line, which every collecting
    /// thread would take from the others).
    orphaned: AtomicBool,
}

impl Epochs {
    pub(crate) fn new() -> Self {
        Self {
            global: AtomicU64::new(1),
            orphans: Mutex::new(Vec::new()),
            orphaned: AtomicBool::new(false),
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
    /// The blocks left keep their order; a list none of which may be released is not
    /// looked through.
    pub(crate) fn collect(&self, registry: &Registry, limbo: &mut Limbo) {
        // The orphans are taken before the scan: a block that a dropped descriptor
        // retired after the scan may be read by a transaction that announced after
        // it, which the scan's `oldest` does not cover.
        // A collection that does not see the flag set leaves the orphans to a later
        // one, which is always safe.
        if self.orphaned.load(Ordering::Acquire)
            && let Ok(mut orphans) = self.orphans.try_lock()
        {
            limbo.append(&mut orphans);
            self.orphaned.store(false, Ordering::Relaxed);
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
        limbo.release_below(oldest.unwrap_or(u64::MAX));
    }

    /// Hands the blocks of a dropped descriptor to whoever collects next.
    pub(crate) fn adopt(&self, limbo: &mut Limbo) {
        let mut orphans = lock(&self.orphans);
        orphans.append(&mut limbo.blocks);
        // ORDERING: the unlock publishes the blocks to whoever sees the flag and
        // takes the lock.
        self.orphaned.store(true, Ordering::Relaxed);
        drop(orphans);
        limbo.floor = u64::MAX;
    }

    /// Releases everything: only when no transaction can run any more.
    pub(crate) fn release_all(&self) {
        lock(&self.orphans)
            .drain(..)
            .for_each(|block| block.release_now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Stm, TxDescriptor, TxOptions};

    /// # Safety
    /// None needed: the test's blocks are words of a vector, released with it.
    unsafe fn keep(_addr: usize, _size: usize) {}

    /// A descriptor whose limbo list cannot drain (another attempt stays announced at
    /// an old epoch) still collects at every commit that frees past the threshold,
    /// but does not look through its blocks: they are in epoch order, and the first
    /// is not yet free; once the reader ends, the next commit releases everything.
    #[test]
    fn a_limbo_list_that_cannot_drain_is_not_looked_through_at_every_commit() {
        let stm = Stm::default();
        let mut words = vec![0usize; 1001];
        let mut reader = TxDescriptor::new(&stm).unwrap();
        reader.begin(TxOptions::default());
        let mut writer = TxDescriptor::new(&stm).unwrap();
        let commit_a_free = |writer: &mut TxDescriptor, word: &mut usize| {
            writer.begin(TxOptions::default());
            // SAFETY: a word of `words`, freed once, released by doing nothing.
            unsafe { writer.free_on_commit(&raw mut *word as usize, 8, keep) }.unwrap();
            writer.commit().unwrap();
        };
        for word in &mut words[..1000] {
            commit_a_free(&mut writer, word);
        }
        let limbo = &writer.core.limbo;
        assert_eq!(limbo.len(), 1000, "a block was released under a reader");
        assert_eq!(limbo.passes, 0, "passes over the list");
        reader.commit().unwrap();
        commit_a_free(&mut writer, &mut words[1000]);
        assert!(
            writer.core.limbo.is_empty(),
            "not released once the reader ended"
        );
    }

    #[test]
    fn a_sorted_list_releases_a_prefix_and_an_unsorted_one_takes_a_pass() {
        let block = |epoch| Retired {
            epoch,
            addr: 0,
            size: 0,
            release: keep,
        };
        // Sorted: a prefix goes, no pass.
        let mut limbo = Limbo::default();
        limbo.extend([3, 3, 5, 7].map(block));
        limbo.release_below(3);
        assert_eq!((limbo.len(), limbo.floor), (4, 3));
        limbo.release_below(6);
        assert_eq!((limbo.len(), limbo.floor, limbo.passes), (1, 7, 0));
        // An orphan out of order: one pass.
        limbo.append(&mut vec![block(2), block(9)]);
        assert_eq!((limbo.floor, limbo.sorted), (2, false));
        limbo.release_below(8);
        assert_eq!((limbo.len(), limbo.floor, limbo.passes), (1, 9, 1));
        limbo.release_below(u64::MAX);
        assert_eq!(
            (limbo.is_empty(), limbo.floor, limbo.sorted),
            (true, u64::MAX, true)
        );
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
                    let mut limbo = Limbo::default();
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
            let mut limbo = Limbo::default();
            limbo.push(Retired {
                epoch,
                addr: 0x1000,
                size: 8,
                release: mark_freed,
            });
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
            let mut limbo = Limbo::default();
            limbo.push(Retired {
                epoch,
                addr: Arc::as_ptr(&block) as usize,
                size: 8,
                release: poison,
            });
            epochs.collect(&registry, &mut limbo);
            reading.join().unwrap();
            epochs.collect(&registry, &mut limbo);
            assert!(limbo.is_empty(), "the block was never released");
            registry.release(reader);
            registry.release(committer);
        });
    }
}
