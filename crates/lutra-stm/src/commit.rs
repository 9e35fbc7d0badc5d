//! Commit and rollback of an attempt.
//!
//! # Protocol: commit of an attempt that wrote
//! 1. The design locks every written record (commit-time locking does it now).
//! 2. CAS the own status `Active → Committing`: the point of no return. Losing the CAS
//!    means a contention manager killed the attempt.
//! 3. If another descriptor holds the commit gate (an irrevocable transaction runs),
//!    roll back and wait for it before restarting.
//! 4. Take the write timestamp `wv` from the clock (fetch-add), and note whether any
//!    `retry` waiter is registered (`waiting.rs`). Unless `wv = rv + 1` (no commit
//!    happened since the snapshot) or the attempt is irrevocable, validate the read
//!    set.
//! 5. Release fence, then write back every buffered word (merging masked writes with
//!    memory) and retire the boxed values it replaces.
//! 6. Release every record with version `wv`, go idle, wake the waiters of the written
//!    records if step 4 saw any, retire freed blocks through the epochs.
//!
//! A read-only attempt commits by going idle: it writes no shared metadata. A straight
//! attempt that wrote runs the same protocol on a straight path first
//! (`Core::try_commit_update` in `straight.rs`), which undoes steps 1–4 and hands over
//! to this one when anything but the common case applies.
//!
//! # Protocol: rollback
//! Release every held record with the version it had before (no commit happened, so
//! readers holding that version stay valid), hand back what the attempt allocated,
//! forget its writes and frees, go idle.

use crate::abort::{Abort, AbortReason};
use crate::descriptor::Core;
use crate::epoch::{COLLECT_THRESHOLD, Retired};
use crate::orec::LockWord;
use crate::registry::TxState;
use crate::sets::{Block, WordMap};
use crate::stm::StmInner;
use crate::sync::data::AtomicUsize;
use crate::sync::{Ordering, fence};

impl Core {
    /// Commits the attempt. A straight one (see `mode.rs`: active, not doomed, holds
    /// no lock before this) commits inline when it wrote nothing, and otherwise on
    /// the straight path (`straight.rs`), or, when that gives up, through the protocol
    /// above without the usability check; every other goes through
    /// [`Core::commit_special`].
    #[inline]
    pub(crate) fn commit(&mut self, stm: &StmInner) -> Result<(), Abort> {
        if !self.mode().is_straight() {
            return self.commit_special(stm);
        }
        debug_assert!(self.doomed.is_none() && self.locks.is_empty());
        if self.writes.is_empty() {
            let solo = self.mode().is_solo();
            self.finish_straight(stm, solo);
            return Ok(());
        }
        if self.try_commit_update(stm) {
            return Ok(());
        }
        self.commit_update_or_roll_back(stm)
    }

    #[cold]
    #[inline(never)]
    fn commit_special(&mut self, stm: &StmInner) -> Result<(), Abort> {
        if let Err(abort) = self.check_usable(stm) {
            self.rollback(stm, abort.reason());
            return Err(abort);
        }
        if self.mode().is_solo() {
            self.finish_committed(stm);
            return Ok(());
        }
        if self.writes.is_empty() {
            if !self.allocations.is_empty() {
                self.release_unpublished_values(&WordMap::default());
            }
            self.finish(stm, Ok(()));
            return Ok(());
        }
        self.commit_update_or_roll_back(stm)
    }

    fn commit_update_or_roll_back(&mut self, stm: &StmInner) -> Result<(), Abort> {
        match self.commit_update(stm) {
            Ok(()) => Ok(()),
            Err(abort) => {
                self.rollback(stm, abort.reason());
                Err(abort)
            }
        }
    }

    fn commit_update(&mut self, stm: &StmInner) -> Result<(), Abort> {
        stm.lock_write_set(self)?;
        let shared = self.shared(stm);
        let committing = self.status.with_state(TxState::Committing);
        if shared
            .status
            .compare_exchange(
                self.status.encode(),
                committing.encode(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_err()
        {
            return Err(self.doom(AbortReason::Killed));
        }
        self.status = committing;
        if !self.mode().is_irrevocable() && stm.gate.closed_by_other(self.slot) {
            return Err(self.doom(AbortReason::Irrevocable));
        }
        let write_version = stm.clock.fetch_add(1, Ordering::SeqCst) + 1;
        // Step 1 of the wait table's committer (`waiting.rs`): every written record is
        // locked by now.
        let waiters = stm.waits.has_waiters();
        if write_version != self.rv + 1 && !self.mode().is_irrevocable() && !self.validate(stm) {
            return Err(self.doom(AbortReason::Validation));
        }
        self.write_back_and_release(stm, write_version, waiters);
        self.finish_committed(stm);
        Ok(())
    }

    /// Steps 5 and 6 up to the end: writes every buffered word back, releases every
    /// held record with version `write_version`, and wakes the waiters of the written
    /// records if step 4 saw any (`waiters`).
    #[inline(always)]
    pub(crate) fn write_back_and_release(
        &mut self,
        stm: &StmInner,
        write_version: u64,
        waiters: bool,
    ) {
        self.write_back(stm);
        for held in self.locks.held() {
            stm.orecs
                .record(held.orec)
                .store(LockWord::unlocked(write_version), Ordering::Release);
        }
        if waiters {
            stm.waits
                .notify_writes(self.locks.held().iter().map(|held| held.orec));
        }
    }

    /// Step 6's end for a committed attempt that wrote: ends it; blocks it freed go to
    /// the limbo list ([`Core::retire_frees`]).
    #[inline]
    fn finish_committed(&mut self, stm: &StmInner) {
        if self.frees.is_empty() {
            self.finish(stm, Ok(()));
        } else {
            let frees = std::mem::take(&mut self.frees);
            self.finish(stm, Ok(()));
            self.retire_frees(stm, frees);
        }
        if self.limbo.len() >= COLLECT_THRESHOLD {
            self.collect_limbo(stm);
        }
    }

    /// Blocks freed by the committed attempt go to the limbo list, to be released once
    /// no transaction can still read them.
    #[cold]
    fn retire_frees(&mut self, stm: &StmInner, frees: Vec<Block>) {
        let epoch = stm.epochs.current_for_retire();
        self.limbo.extend(frees.into_iter().map(|block| Retired {
            epoch,
            addr: block.addr,
            size: block.size,
            release: block.release,
        }));
    }

    /// Releases what the limbo list may release: called where the list grows (at
    /// commit), so that a straight attempt's end need not look at it.
    #[cold]
    fn collect_limbo(&mut self, stm: &StmInner) {
        stm.epochs.collect(&stm.registry, &mut self.limbo);
    }

    /// Step 5: writes every buffered word to memory.
    #[inline]
    fn write_back(&mut self, stm: &StmInner) {
        // ORDERING: pairs with the acquire fence of the read protocol in `access.rs`:
        // a reader that loads a written value also sees this attempt's lock.
        fence(Ordering::Release);
        if !self.mode().is_straight() {
            self.write_back_replacing(stm);
            return;
        }
        // Straight: no write replaces a boxed value, nothing was allocated for one.
        for entry in self.writes.entries() {
            // SAFETY: the program vouched for every written address when it stored to
            // it, and this attempt holds the record guarding it.
            let word = unsafe { &*(entry.addr as *const AtomicUsize) };
            word.store(
                entry.merged_with(word.load(Ordering::Relaxed)),
                Ordering::Relaxed,
            );
        }
    }

    /// [`Core::write_back`] of an attempt that may replace boxed values (retired once
    /// no transaction can read them) or hold values it allocated and did not publish.
    #[cold]
    #[inline(never)]
    fn write_back_replacing(&mut self, stm: &StmInner) {
        let mut published = WordMap::default();
        let mut replaced = Vec::new();
        for entry in self.writes.entries() {
            // SAFETY: the program vouched for every written address when it stored to
            // it, and this attempt holds the record guarding it.
            let word = unsafe { &*(entry.addr as *const AtomicUsize) };
            let old = word.load(Ordering::Relaxed);
            word.store(entry.merged_with(old), Ordering::Relaxed);
            if let Some(release) = entry.retire_old {
                published.insert(entry.value, ());
                replaced.push((old, release));
            }
        }
        if !self.allocations.is_empty() {
            self.release_unpublished_values(&published);
        }
        if !replaced.is_empty() {
            let epoch = stm.epochs.current_for_retire();
            self.limbo
                .extend(replaced.into_iter().map(|(addr, release)| Retired {
                    epoch,
                    addr,
                    size: 0,
                    release,
                }));
        }
    }

    /// Hands back the boxed `TVar` values this attempt allocated but did not publish
    /// (overwritten by a later write of the same attempt).
    fn release_unpublished_values(&mut self, published: &WordMap<()>) {
        for block in self.allocations.iter().filter(|block| block.tvar_value) {
            if !published.contains_key(&block.addr) {
                // SAFETY: allocated by this attempt and never made visible to others.
                unsafe { (block.release)(block.addr, block.size) };
            }
        }
    }

    pub(crate) fn rollback(&mut self, stm: &StmInner, reason: AbortReason) {
        if !self.mode().is_active() {
            return;
        }
        for &[addr, old] in self.solo_undo.entries().iter().rev() {
            // SAFETY: a solo attempt's own write (`store_solo`, or a store logged in
            // the window by the caller, whose address it vouched for), undone while it
            // is still alone in the engine.
            unsafe { &*(addr as *const AtomicUsize) }.store(old, Ordering::Relaxed);
        }
        self.release_unchanged(stm);
        for block in &self.allocations {
            // SAFETY: allocated by this attempt; its writes are discarded, so nothing
            // committed refers to the block.
            unsafe { (block.release)(block.addr, block.size) };
        }
        self.finish(stm, Err(reason));
    }

    /// Releases every record the attempt holds with the version it had before (no
    /// commit happened, so readers holding that version stay valid) and empties the
    /// lock set.
    pub(crate) fn release_unchanged(&mut self, stm: &StmInner) {
        for held in self.locks.held() {
            stm.orecs
                .record(held.orec)
                .store(LockWord::unlocked(held.version), Ordering::Release);
        }
        self.locks.clear();
    }
}
