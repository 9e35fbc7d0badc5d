//! Blocks of memory freed by a solo attempt (`solo.rs`), kept off the general
//! commit: a solo attempt that would be straight (`mode.rs`) but for such blocks
//! commits on a path of its own, the blocks commit, [`Core::commit_solo_blocks`], which
//! `TxDescriptor::try_commit` (`straight.rs`) takes. The C ABI's `stm_free` inside
//! transactions is what it serves (STAMP's vacation frees in some of its
//! transactions). Blocks an attempt allocates keep it straight by themselves: a straight
//! commit forgets them (`Core::finish_straight`), a rollback releases them.
//!
//! A solo attempt is alone in the engine: no other attempt runs until it ends (the
//! solo gate's protocol). So a block it frees can be released as soon as it commits,
//! before it gives the gate back: nothing else can hold a reference to it, and every
//! later attempt of any descriptor begins on the committed memory, where the block is
//! unreachable. The epochs (`epoch.rs`) are not needed for it, nor are the unchanged
//! writes that make other users of a freed block conflict with the freeing attempt:
//! a solo free writes none (`TxDescriptor::write_unchanged`), so a large block
//! neither fills the undo log nor takes the attempt off the blocks commit.
//!
//! # Invariants
//! - The mode `SoloBlocks` is taken only by a solo attempt that would be straight
//!   but for the blocks it freed (`Core::frees`). Whatever makes the attempt not
//!   straight ([`Core::mark_not_straight`], a doom) leaves it, and so does every end
//!   of an attempt (the blocks commit, `Core::finish`).
//! - An attempt in `SoloBlocks` has nothing to write back (its writes are in
//!   memory, their old words in the solo undo log), holds no lock, no gate, no
//!   serial, counts no statistics and calls no hooks, as a straight one.
//!
//! # Protocol: the blocks commit
//! 1. Release every freed block, still alone in the engine.
//! 2. End as a straight commit (`Core::finish_straight`): the allocations forgotten (they
//!    are the program's now), idle, quiescent, the solo gate given back.
//!
//! An abort takes the general rollback (`commit.rs`), which frees the allocations
//! and forgets the frees.

use crate::attempt::descriptor::Core;
use crate::attempt::mode::Mode;
use crate::global::stm::StmInner;

impl Core {
    /// Notes that the running attempt freed a block: a straight attempt (or one
    /// straight but for blocks) stays so but for blocks, solo (`SoloBlocks`) or
    /// instrumented (`Blocks`, `blocks.rs`); any other is no longer straight.
    #[inline]
    pub(crate) fn note_free(&mut self) {
        let mode = match self.mode() {
            Mode::SoloStraight | Mode::SoloBlocks => Mode::SoloBlocks,
            Mode::Straight | Mode::Blocks => Mode::Blocks,
            other => other.not_straight(),
        };
        self.set_mode(mode);
    }

    /// The blocks commit of a solo attempt that is straight but for blocks (see the
    /// module's protocol). Returns `true`: it cannot fail.
    #[inline(never)]
    pub(crate) fn commit_solo_blocks(&mut self, stm: &StmInner) -> bool {
        debug_assert!(self.mode() == Mode::SoloBlocks);
        debug_assert!(self.doomed.is_none() && self.writes.is_empty());
        // Step 1.
        for block in &self.frees {
            // SAFETY: the program handed the block to `free_on_commit` with
            // `release` as the way to free it, once; the attempt committed, and it is
            // still alone in the engine, so no transaction can reach the block.
            unsafe { (block.release)(block.addr, block.size) };
        }
        self.frees.clear();
        // Step 2.
        self.set_mode(Mode::SoloStraight);
        self.finish_straight(stm, true);
        true
    }
}

#[cfg(test)]
pub(in crate::modes) mod tests {
    use crate::attempt::mode::Mode;
    use crate::{AbortReason, Config, Stm, TxDescriptor, TxOptions};
    use std::cell::RefCell;

    thread_local! {
        /// The blocks `record` was asked to release, on this test's thread.
        static RELEASED: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    }

    /// A release function that only records the address.
    pub(in crate::modes) unsafe fn record(addr: usize, _size: usize) {
        RELEASED.with(|released| released.borrow_mut().push(addr));
    }

    /// Takes the addresses `record` was given on this thread since the last call.
    pub(in crate::modes) fn released() -> Vec<usize> {
        RELEASED.with(|released| std::mem::take(&mut *released.borrow_mut()))
    }

    /// Runs an empty attempt of `desc` that commits (`commit`) or aborts: it
    /// releases nothing the attempts before it left (their allocations, once
    /// committed, are the program's; their frees, once aborted, are forgotten).
    fn next_releases_nothing(desc: &mut TxDescriptor, commit: bool) {
        desc.begin(TxOptions::default());
        if commit {
            desc.commit().unwrap();
        } else {
            desc.rollback(AbortReason::Explicit);
        }
        assert_eq!(released(), Vec::<usize>::new(), "nothing left to release");
    }

    /// A solo descriptor on an engine without statistics, its first attempt begun
    /// and committed (so the next begins on the straight path).
    pub(in crate::modes) fn solo_descriptor(stm: &Stm) -> TxDescriptor {
        let mut desc = TxDescriptor::new(stm).unwrap();
        desc.allow_solo(true);
        desc.begin(TxOptions::default());
        desc.commit().unwrap();
        desc
    }

    fn begin_straight(desc: &mut TxDescriptor) {
        assert!(desc.try_begin(0), "the straight begin applies");
        assert!(desc.is_solo() && desc.core.mode().is_straight());
    }

    /// A solo descriptor (of its own engine) running a straight attempt that allocated
    /// block 0x1000 and freed 0x2000.
    fn solo_with_blocks() -> TxDescriptor {
        let mut desc = solo_descriptor(&Stm::new(Config::default().with_stats(false)));
        begin_straight(&mut desc);
        desc.record_allocation(0x1000, 8, record);
        // SAFETY: `record` frees nothing; the block is never dereferenced.
        unsafe { desc.free_on_commit(0x2000, 0, record).unwrap() };
        desc
    }

    #[test]
    fn a_committed_solo_free_is_released_at_once_and_allocations_are_kept() {
        let mut desc = solo_with_blocks();
        assert!(
            (desc.core.mode() == Mode::SoloBlocks),
            "allocating and freeing kept it short"
        );
        assert!(desc.try_commit(), "the blocks commit applies");
        assert!(!desc.is_active() && (desc.core.mode() == Mode::Settled));
        assert_eq!(released(), vec![0x2000], "the freed block, at the commit");
        next_releases_nothing(&mut desc, false);
    }

    #[test]
    fn a_solo_free_writes_none_of_its_words() {
        let mut desc = solo_descriptor(&Stm::new(Config::default().with_stats(false)));
        begin_straight(&mut desc);
        // More words than the undo window opens with: logged, they would grow it.
        let block = vec![7usize; 1024];
        let addr = block.as_ptr() as usize;
        // SAFETY: `record` frees nothing; the block outlives the attempt.
        unsafe { desc.free_on_commit(addr, 1024 * size_of::<usize>(), record) }.unwrap();
        assert!((desc.core.mode() == Mode::SoloBlocks) && desc.core.solo_undo.entries().is_empty());
        assert!(desc.try_commit(), "the blocks commit applies");
        assert_eq!(released(), vec![addr]);
    }

    #[test]
    fn an_aborted_solo_attempt_frees_its_allocations_not_its_frees() {
        let mut desc = solo_with_blocks();
        desc.rollback(AbortReason::Explicit);
        assert_eq!(released(), vec![0x1000]);
        assert!(desc.core.mode() != Mode::SoloBlocks);
        next_releases_nothing(&mut desc, true);
    }

    #[test]
    fn a_doom_ends_the_short_path() {
        let mut desc = solo_with_blocks();
        let _ = desc.doom(AbortReason::Explicit);
        assert!(desc.core.mode() != Mode::SoloBlocks && !desc.try_commit());
        assert!(desc.commit().is_err());
        assert_eq!(released(), vec![0x1000]);
    }

    #[test]
    fn an_instrumented_attempt_that_frees_is_not_straight() {
        let stm = Stm::new(Config::default().with_stats(false));
        let mut desc = TxDescriptor::new(&stm).unwrap();
        let _other = TxDescriptor::new(&stm).unwrap();
        desc.begin(TxOptions::default());
        desc.record_allocation(0x1000, 8, record);
        assert!(
            desc.core.mode().is_straight(),
            "an allocation keeps it straight"
        );
        // SAFETY: as above.
        unsafe { desc.free_on_commit(0x2000, 0, record).unwrap() };
        assert!(!desc.core.mode().is_straight() && desc.core.mode() != Mode::SoloBlocks);
        desc.commit().unwrap();
        assert!(!released().contains(&0x1000));
    }

    #[test]
    fn a_straight_commit_forgets_its_allocations() {
        let stm = Stm::new(Config::default().with_stats(false));
        let mut solo = solo_descriptor(&stm);
        begin_straight(&mut solo);
        solo.record_allocation(0x1000, 8, record);
        assert!(
            solo.core.mode().is_straight() && solo.try_commit_inline(),
            "committed inline"
        );
        next_releases_nothing(&mut solo, false);
        // Instrumented (another descriptor is alive), with a write: the straight
        // commit of `straight.rs`.
        let mut other = TxDescriptor::new(&stm).unwrap();
        let mut word = 0usize;
        other.begin(TxOptions::default());
        other.record_allocation(0x3000, 8, record);
        // SAFETY: `word` is an aligned word that outlives the attempt.
        unsafe { other.store(&mut word, 1, usize::MAX).unwrap() };
        assert!(other.core.mode().is_straight() && !other.is_solo() && other.try_commit());
        next_releases_nothing(&mut other, false);
        assert_eq!(word, 1);
    }
}
