//! The straight paths of a transaction's begin and end: [`TxDescriptor::try_begin`]
//! and [`TxDescriptor::try_commit`], the common cases of `begin` and `commit` for a
//! driver that keeps its own general path out of line. The C ABI's `stm_start` and
//! `stm_commit` try these first and tail-call their general path otherwise, so that
//! their common case needs no stack frame.
//!
//! # Invariants
//! - `try_begin` does what `begin(TxOptions::site(site))` does, when the engine has
//!   neither hooks nor statistics (`StmInner::lean_ends`) and the last transaction
//!   left nothing to give way to — which one flag, `Core::between_lean`, tells: set
//!   by a commit of a transaction without aborts, cleared by every begin, doom and
//!   `prepare`. The attempt it begins is lean (`Core::lean`).
//!   When it returns `false` the descriptor is as it was: between transactions, its
//!   epoch not announced, its status word idle (a serial it took is simply skipped).
//! - `try_commit` does what `commit` does for a lean attempt with nothing to write
//!   back (it read only, or it ran solo: its writes are already in memory); when it
//!   returns `false` the attempt runs on untouched.
//! - Neither calls anything: a lean attempt counts no statistics, and its solo undo
//!   log, if any, opens on a buffer already allocated and closes within the
//!   capacity kept (a store that grows the log makes the attempt not lean).

use crate::descriptor::{Core, TxDescriptor, TxOptions};
use crate::stm::StmInner;
use crate::sync::Ordering;

impl TxDescriptor {
    /// Begins a transaction at `site` (priority 0, not irrevocable) if nothing but the
    /// common case applies: the descriptor's last transaction committed without
    /// aborts on an engine without hooks or statistics (so it left nothing to give
    /// way to), and no serial attempt is in the way.
    /// Returns `false`, having changed nothing, otherwise: call
    /// [`TxDescriptor::begin`] then (the first transaction of a descriptor always
    /// does).
    ///
    /// ```
    /// use lutra_stm::{Config, Stm, TxDescriptor, TxOptions};
    /// let stm = Stm::new(Config::default().with_stats(false));
    /// let mut tx = TxDescriptor::new(&stm).unwrap();
    /// if !tx.try_begin(7) {
    ///     tx.begin(TxOptions::site(7));
    /// }
    /// assert!(tx.is_active());
    /// if !tx.try_commit() {
    ///     tx.commit().unwrap();
    /// }
    /// assert!(!tx.is_active());
    /// ```
    #[inline(always)]
    pub fn try_begin(&mut self, site: u32) -> bool {
        let (stm, core) = (&*self.stm, &mut self.core);
        if !core.between_lean {
            return false;
        }
        debug_assert!(
            stm.lean_ends
                && !core.active
                && core.last_abort.is_none()
                && !core.restart_irrevocable
                && core.aborts_in_row == 0
        );
        if core.solo_allowed && stm.solo.try_enter(&stm.registry, core.slot) {
            if !core.solo_undo.is_allocated() {
                stm.solo.exit();
                return false;
            }
            core.start_solo_ready(stm);
        } else if !core.try_announce(stm) {
            return false;
        }
        core.between_lean = false;
        core.options = TxOptions::site(site);
        core.lean = true;
        core.age = core.rv;
        true
    }

    /// Commits the running attempt if it is lean and has nothing to write back (it
    /// only read, or it ran solo). Returns `false`, having done nothing, otherwise:
    /// call [`TxDescriptor::commit`] then. A lean attempt with nothing to write back
    /// cannot fail to commit: its reads were consistent at its snapshot, which is
    /// its serialization point.
    #[inline(always)]
    pub fn try_commit(&mut self) -> bool {
        let core = &mut self.core;
        if !core.lean || !core.writes.is_empty() {
            return false;
        }
        core.finish_lean(&self.stm);
        true
    }
}

impl Core {
    /// [`Core::announce`] unless a serial attempt stands in the way: then the
    /// announcement is withdrawn and `false` returned (the general path waits).
    #[inline(always)]
    fn try_announce(&mut self, stm: &StmInner) -> bool {
        self.publish_active(stm);
        if stm.serial.held_by_other(self.slot) {
            self.withdraw(stm);
            return false;
        }
        self.become_active(stm);
        true
    }

    /// Takes back what [`Core::publish_active`] made visible.
    #[inline(always)]
    fn withdraw(&mut self, stm: &StmInner) {
        let shared = self.shared(stm);
        stm.epochs.quiesce_in(&shared.epoch);
        self.status = self.status.idle();
        shared.status.store(self.status.encode(), Ordering::Release);
    }

    /// The end of a lean attempt that committed with nothing to write back: what
    /// [`Core::finish`] does for it, with no call (a lean attempt has no statistics
    /// to count, and its undo log is within the capacity kept).
    #[inline(always)]
    pub(crate) fn finish_lean(&mut self, stm: &StmInner) {
        debug_assert!(self.lean && self.writes.is_empty() && self.locks.is_empty());
        debug_assert!(self.started_at.is_none());
        self.go_idle(stm);
        if self.solo {
            self.end_solo_ready(stm);
        }
        self.lean = false;
        self.active = false;
        self.between_lean = true;
    }
}
