//! Boxed `TVar` values lent by reference, and changed in place by the attempt that
//! wrote them: what lets a large value (a map) be read without cloning it, and be
//! changed many times by one transaction without a copy per change.
//!
//! - [`Transaction::read_with`](crate::Transaction::read_with) lends the value a read
//!   finds (committed, or this attempt's own buffered write) to a closure, by
//!   reference: no clone, so a reader writes nothing shared (no reference count).
//! - [`Transaction::update_in_place`](crate::Transaction::update_in_place) writes a
//!   private clone the first time, then changes that clone in place.
//!
//! # Invariants
//! - A value lent by `read_with` stays allocated until the closure returns: a
//!   committed value because the attempt's epoch stays announced (it cannot end inside
//!   the closure, which only has a `Transaction`), and a buffered one because the
//!   attempt's blocks are released only when it ends or when an `or_else` checkpoint
//!   opened after the block's allocation is rolled back, which happens after the
//!   closure that opened it returned (the lent value predates such a checkpoint).
//! - A value is changed in place only when it is *private*: allocated by this attempt
//!   for its own write to that very `TVar` (one box per write: no other `TVar` holds
//!   it), still that `TVar`'s buffered value (so never published: publication ends
//!   the attempt), allocated at or after the newest open checkpoint (a roll back to
//!   that checkpoint frees the whole box, so it needs no old contents), and no value
//!   is lent at that moment (`lent == 0`: no shared reference can alias the `&mut`).
//!   Any other case writes a fresh private clone first.
//! - `private` maps a word address to the position in `allocations` of the private
//!   value last written there by `update_in_place`; an entry may be stale (the block
//!   rolled back, or the word written again since): it is trusted only after the
//!   checks above, done against `allocations` and the write set.

use crate::attempt::descriptor::Core;
use crate::sets::write_set::WordMap;

/// A `private` map larger than this is dropped rather than cleared at the end of an
/// attempt (clearing costs its capacity).
const PRIVATE_KEPT: usize = 64;

impl Core {
    /// The word of the private value buffered for the `TVar` at `addr`, if there is
    /// one that may be changed in place now (see the module's invariants).
    pub(crate) fn private_value(&self, addr: usize) -> Option<usize> {
        if self.lent > 0 {
            return None;
        }
        let &at = self.private.get(&addr)?;
        if at < self.writes.allocations_at_checkpoint() {
            return None;
        }
        let block = self.allocations.get(at)?;
        let entry = self.writes.get(addr)?;
        (block.tvar_value && entry.mask == usize::MAX && entry.value == block.addr)
            .then_some(block.addr)
    }

    /// Notes that the newest allocation is the private value just written to the
    /// `TVar` at `addr`.
    pub(crate) fn note_private(&mut self, addr: usize) {
        if let Some(at) = self.allocations.len().checked_sub(1) {
            self.private.insert(addr, at);
        }
    }

    /// Empties `private` at the end of an attempt, in time proportional to its size.
    pub(crate) fn forget_private(&mut self) {
        if self.private.capacity() > PRIVATE_KEPT {
            self.private = WordMap::default();
        } else {
            self.private.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{AbortReason, Stm, TVar, TxDescriptor, TxOptions};

    #[test]
    fn later_changes_reuse_the_private_value() {
        let stm = Stm::default();
        let log = TVar::new(vec![0u32]);
        let mut desc = TxDescriptor::new(&stm).unwrap();
        desc.begin(TxOptions::default());
        for i in 1..100 {
            desc.transaction()
                .update_in_place(&log, |log| log.push(i))
                .unwrap();
        }
        assert_eq!(
            desc.core.allocations.len(),
            1,
            "one private copy for 99 changes"
        );
        desc.commit().unwrap();
        let seen = stm.atomically(|tx| tx.read_with(&log, |log, _| Ok(log.clone())));
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn uncommitted_changes_are_private_and_undone_by_an_abort() {
        let stm = Stm::default();
        let log = TVar::new(vec![1u32]);
        let mut desc = TxDescriptor::new(&stm).unwrap();
        desc.begin(TxOptions::default());
        desc.transaction()
            .update_in_place(&log, |log| log.push(2))
            .unwrap();
        desc.transaction()
            .update_in_place(&log, |log| log.push(3))
            .unwrap();
        let outside = stm.atomically(|tx| tx.read_with(&log, |log, _| Ok(log.clone())));
        assert_eq!(outside, vec![1], "others see the committed value only");
        desc.rollback(AbortReason::Explicit);
        assert_eq!(stm.atomically(|tx| tx.read(&log)), vec![1]);
    }

    #[test]
    fn a_rolled_back_branch_does_not_keep_its_changes() {
        let stm = Stm::default();
        let log = TVar::new(Vec::<u32>::new());
        let got = stm.atomically(|tx| {
            tx.update_in_place(&log, |log| log.push(1))?;
            let branch = tx.or_else(
                |tx| {
                    tx.update_in_place(&log, |log| log.push(2))?;
                    tx.update_in_place(&log, |log| log.push(3))?;
                    tx.retry()
                },
                |tx| tx.read(&log),
            )?;
            tx.update_in_place(&log, |log| log.push(4))?;
            Ok(branch)
        });
        assert_eq!(got, vec![1], "the branch's changes were undone");
        assert_eq!(stm.atomically(|tx| tx.read(&log)), vec![1, 4]);
    }

    #[test]
    fn a_lent_value_is_copied_not_changed() {
        let stm = Stm::default();
        let log = TVar::new(vec![1u32]);
        stm.atomically(|tx| {
            tx.update_in_place(&log, |log| log.push(2))?;
            tx.read_with(&log, |lent, tx| {
                tx.update_in_place(&log, |log| log.push(3))?;
                assert_eq!(lent, &vec![1, 2], "the lent value did not change under it");
                Ok(())
            })?;
            tx.update_in_place(&log, |log| log.push(4))
        });
        assert_eq!(stm.atomically(|tx| tx.read(&log)), vec![1, 2, 3, 4]);
    }

    #[test]
    fn a_value_written_again_is_not_changed_through_a_stale_record() {
        let stm = Stm::default();
        let log = TVar::new(vec![0u32]);
        stm.atomically(|tx| {
            tx.update_in_place(&log, |log| log.push(1))?;
            tx.write(&log, vec![7])?;
            tx.update_in_place(&log, |log| log.push(8))
        });
        assert_eq!(stm.atomically(|tx| tx.read(&log)), vec![7, 8]);
    }
}
