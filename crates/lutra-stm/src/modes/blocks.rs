//! Blocks of memory freed by an instrumented attempt, kept off the general commit: an
//! instrumented attempt that would be straight (`mode.rs`) but for blocks it freed
//! (`Mode::Blocks`) commits on a path of its own, the blocks commit,
//! [`Core::commit_blocks`], which `TxDescriptor::try_commit` (`straight.rs`) takes.
//! It is the straight commit of `straight.rs` and the retirement of the blocks through
//! the epochs (`epoch.rs`), without the general commit's end (statistics, hooks, the
//! boxed values' write-back). The C ABI's `stm_free` inside transactions is what it
//! serves (the hash set, the red-black tree and vacation free in some of their
//! transactions); `solo_blocks.rs` is the same for a solo attempt.
//!
//! # Invariants
//! - The mode `Blocks` is taken only by a `Straight` attempt that frees a block
//!   (`Core::note_free`). Whatever makes the attempt not straight
//!   ([`Core::mark_not_straight`], a doom) leaves it for `Instrumented`, and so does
//!   every end of an attempt (the blocks commit, `Core::finish`).
//! - An attempt in `Blocks` holds no lock before its commit, no gate, no serial,
//!   counts no statistics, calls no hooks, has replaced no boxed value and allocated
//!   none, as a straight one: its allocations are blocks for the program (the C
//!   ABI's claims of its frees among them), forgotten at a commit and released at a
//!   rollback.
//!
//! # Protocol: the blocks commit
//! 1. An attempt that wrote commits through `commit.rs`'s steps 1–6 as the straight
//!    commit does (`StraightCommit`: one compare-and-swap per record; at the first
//!    obstacle it undoes what it did, becomes `Instrumented`, and the general commit
//!    takes over and meets the obstacle). One that wrote nothing (its frees wrote no
//!    word) commits at its snapshot, as a straight attempt that only read.
//! 2. The freed blocks go to the descriptor's limbo list at the epoch that
//!    `current_for_retire` gives after the records are released (the epochs' step 2).
//! 3. End as a straight commit (`Core::finish_straight`): the allocations forgotten,
//!    idle, quiescent.
//! 4. Release what the limbo list may release (`commit.rs`'s `Core::collect_limbo`),
//!    quiescent already, so the own announcement holds nothing back.
//!
//! An abort takes the general rollback (`commit.rs`), which releases the allocations
//! and forgets the frees.

use crate::attempt::abort::Abort;
use crate::attempt::commit::{CommitPath, Obstacle};
use crate::attempt::descriptor::Core;
use crate::attempt::mode::Mode;
use crate::global::stm::StmInner;
use crate::modes::straight::StraightCommit;

impl Core {
    /// The blocks commit of an instrumented attempt that is straight but for blocks
    /// (see the module's protocol). Returns `false` when something stands in its
    /// way, having undone what it did and left the attempt `Instrumented` (as
    /// `Core::try_commit_update` does): the general commit runs then.
    #[inline(never)]
    pub(crate) fn commit_blocks(&mut self, stm: &StmInner) -> bool {
        debug_assert!(self.mode() == Mode::Blocks && self.doomed.is_none());
        debug_assert!(self.locks.is_empty() && !self.frees.is_empty());
        debug_assert!(self.allocations.iter().all(|block| !block.tvar_value));
        if self.writes.is_empty() {
            // Step 1, for an attempt that only read: its snapshot.
            self.end_blocks(stm);
            return true;
        }
        if !stm.locks_at_commit() {
            self.mark_not_straight();
            return false;
        }
        self.commit_writes::<BlocksCommit>(stm)
    }

    /// Steps 2–4 of the blocks commit, once the attempt's writes are back and its
    /// records released.
    #[inline(always)]
    fn end_blocks(&mut self, stm: &StmInner) {
        // Step 2.
        self.retire_frees(stm);
        // Step 3.
        self.finish_straight(stm, false);
        // Step 4.
        self.collect_limbo_if_due(stm);
    }
}

/// The blocks commit's way through `commit.rs`'s protocol: the straight commit's
/// ([`StraightCommit`]), ending with the freed blocks retired.
pub(crate) struct BlocksCommit;

impl CommitPath for BlocksCommit {
    type Output = bool;
    const MAY_BE_IRREVOCABLE: bool = false;
    const STRAIGHT: bool = true;

    #[inline(always)]
    fn lock_writes(core: &mut Core, stm: &StmInner) -> Result<(), Abort> {
        StraightCommit::lock_writes(core, stm)
    }

    #[inline(always)]
    fn stopped(core: &mut Core, stm: &StmInner, obstacle: Obstacle) -> bool {
        StraightCommit::stopped(core, stm, obstacle)
    }

    #[inline(always)]
    fn committed(core: &mut Core, stm: &StmInner) -> bool {
        core.writes.clear();
        core.locks.clear();
        core.end_blocks(stm);
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::attempt::mode::Mode;
    use crate::modes::solo_blocks::tests::{record, released};
    use crate::{AbortReason, Config, DesignKind, Stm, TxDescriptor, TxOptions};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// An engine without statistics (its attempts are straight) and two descriptors
    /// of it (so neither runs solo), each with a first transaction committed.
    fn two_descriptors() -> (Stm, TxDescriptor, TxDescriptor) {
        let stm = Stm::new(
            Config::default()
                .with_design(DesignKind::WriteBackCtl)
                .with_stats(false),
        );
        let mut first = TxDescriptor::new(&stm).unwrap();
        let mut second = TxDescriptor::new(&stm).unwrap();
        for desc in [&mut first, &mut second] {
            desc.begin(TxOptions::default());
            desc.commit().unwrap();
        }
        (stm, first, second)
    }

    /// Begins a straight attempt of `desc` that writes 1 into `word` and frees
    /// `block` (its `size` bytes written unchanged).
    fn write_and_free(desc: &mut TxDescriptor, word: &AtomicUsize, block: &[usize], size: usize) {
        assert!(desc.try_begin(0), "the straight begin applies");
        // SAFETY: `word` and `block` outlive the attempt, are aligned, and are only
        // accessed through the engine while it runs; `record` frees nothing.
        unsafe {
            desc.store(word.as_ptr(), 1, usize::MAX).unwrap();
            desc.free_on_commit(block.as_ptr() as usize, size, record)
                .unwrap();
        }
        assert_eq!(desc.core.mode(), Mode::Blocks, "a free keeps it short");
    }

    #[test]
    fn a_blocks_commit_writes_back_and_retires_the_block_past_a_reader() {
        let (_stm, mut writer, mut reader) = two_descriptors();
        let word = AtomicUsize::new(0);
        let block = vec![7usize; 4];
        reader.begin(TxOptions::default());
        write_and_free(&mut writer, &word, &block, 4 * size_of::<usize>());
        assert!(writer.try_commit(), "the blocks commit applies");
        assert_eq!(writer.core.mode(), Mode::Settled);
        assert_eq!(word.load(Ordering::Relaxed), 1, "written back");
        assert_eq!(block, vec![7usize; 4], "the freed words stay as they were");
        assert!(released().is_empty(), "released under a running reader");
        assert_eq!(writer.core.limbo.len(), 1, "retired");
        reader.commit().unwrap();
    }

    #[test]
    fn a_blocks_commit_whose_read_changed_gives_up_to_the_general_commit() {
        let (_stm, mut writer, mut other) = two_descriptors();
        let (word, read) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let block = vec![0usize; 2];
        write_and_free(&mut writer, &word, &block, 2 * size_of::<usize>());
        // SAFETY: as in `write_and_free`.
        unsafe { writer.load(read.as_ptr()).unwrap() };
        assert!(other.try_begin(0));
        // SAFETY: as above.
        unsafe { other.store(read.as_ptr(), 5, usize::MAX).unwrap() };
        assert!(other.try_commit());
        assert!(
            !writer.try_commit(),
            "its read changed: the blocks commit gives up"
        );
        assert_eq!(
            writer.core.mode(),
            Mode::Instrumented,
            "it left the short path"
        );
        assert!(writer.core.locks.is_empty(), "nothing stays locked");
        assert!(writer.commit().is_err(), "the general commit meets it too");
        assert_eq!(word.load(Ordering::Relaxed), 0, "nothing written back");
        assert_eq!(writer.core.limbo.len(), 0, "nothing retired");
        assert!(released().is_empty());
    }

    #[test]
    fn a_free_that_writes_nothing_is_retired_not_lost() {
        let (_stm, mut writer, _other) = two_descriptors();
        assert!(writer.try_begin(0));
        // SAFETY: `record` frees nothing; the block is never dereferenced.
        unsafe { writer.free_on_commit(0x2000, 0, record).unwrap() };
        assert_eq!(writer.core.mode(), Mode::Blocks);
        assert!(writer.try_commit());
        assert_eq!(writer.core.limbo.len(), 1);
    }

    #[test]
    fn a_doom_or_an_abort_ends_the_short_path_and_forgets_the_frees() {
        let (_stm, mut writer, _other) = two_descriptors();
        let word = AtomicUsize::new(0);
        let block = vec![0usize; 1];
        write_and_free(&mut writer, &word, &block, size_of::<usize>());
        let _ = writer.doom(AbortReason::Explicit);
        assert_eq!(writer.core.mode(), Mode::Instrumented);
        assert!(!writer.try_commit() && writer.commit().is_err());
        assert_eq!(word.load(Ordering::Relaxed), 0);
        assert_eq!(writer.core.limbo.len(), 0, "nothing retired");
        assert!(released().is_empty());
    }
}
