//! Attempts of a C transaction: begin (with flat nesting), and the abort path that
//! rolls back, waits, and restarts or ends the transaction (steps 2 and 3 of the abort
//! protocol in the crate header).
//!
//! # Invariants
//! - After [`ThreadTx::end_attempt`] either a fresh attempt runs at nesting 1 and the
//!   returned code has `STM_PATH_INSTRUMENTED` set, or the transaction is over
//!   (nesting 0, `ended_by_abort`) and the code has it clear.
//! - Each aborted attempt is counted once, when it is rolled back.

use crate::status::{
    CapiError, CapiResult, LUTRA_ABORT_RETRY, STM_PATH_INSTRUMENTED, Site, abort_code,
};
use crate::thread::{Attributes, ThreadTx};
use lutra_stm::{AbortReason, Decision, TxOptions};
use std::ffi::c_int;

/// How an abort reaches the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    /// tinySTM's: roll back and restart at once; the caller jumps back to `sigsetjmp`
    /// (or, in `stm_atomically`, calls the function again).
    Restart,
    /// Lutra's: report the abort and leave the attempt doomed until the caller returns.
    Report,
}

impl ThreadTx {
    /// Starts a transaction, or joins the running one (flat nesting). Returns whether
    /// this is the outermost level.
    #[inline(always)]
    pub(crate) fn begin(&mut self, attr: Attributes) -> bool {
        if self.nesting > 0 {
            self.nesting += 1;
            return false;
        }
        self.plain_ready = false;
        let mut options = TxOptions {
            site: attr.id,
            priority: 0,
            irrevocable: std::mem::take(&mut self.irrevocable_next),
            read_only: attr.read_only,
        };
        if self.in_task && attr.id != 0 {
            announce_to_scheduler(attr.id);
        }
        // The start hook must see this transaction's site, not the previous one's.
        if self.desc.prepare_to_start(options) == Decision::Serialize {
            options.irrevocable = true;
        }
        self.attr_raw = attr.raw;
        self.ended_by_abort = false;
        self.pending = None;
        self.stats.consecutive_aborts = 0;
        self.desc.begin(options);
        self.nesting = 1;
        true
    }

    /// The common case of [`ThreadTx::begin`]: an outermost transaction with no
    /// attribute but perhaps the read-only hint (`raw`, see
    /// [`AttrLayout::no_attributes`](crate::thread::AttrLayout::no_attributes)) on a plain
    /// thread, begun on the engine's straight path
    /// ([`TxDescriptor::try_begin`](lutra_stm::TxDescriptor::try_begin)). Returns
    /// `false`, having changed nothing, when any other case applies.
    #[inline(always)]
    pub(crate) fn try_begin_plain(&mut self, raw: i32) -> bool {
        // A plain thread's state is never a task's (`fast.rs`).
        debug_assert!(!self.in_task);
        debug_assert!(
            !self.plain_ready
                || (self.nesting == 0
                    && !self.irrevocable_next
                    && !self.ended_by_abort
                    && self.pending.is_none()
                    && self.stats.consecutive_aborts == 0)
        );
        if !self.layout.no_attributes(raw) {
            // The read-only hint alone begins straight too (its own begin).
            return raw == self.layout.read_only_alone() && self.try_begin_plain_read_only();
        }
        if !self.plain_ready || !self.desc.try_begin(0) {
            return false;
        }
        self.plain_ready = false;
        self.attr_raw = raw;
        self.nesting = 1;
        true
    }

    /// [`ThreadTx::try_begin_plain`] for a transaction whose only attribute is the
    /// read-only hint, begun on the engine's straight path for it
    /// ([`TxDescriptor::try_begin_read_only`](lutra_stm::TxDescriptor::try_begin_read_only)).
    #[inline(always)]
    pub(crate) fn try_begin_plain_read_only(&mut self) -> bool {
        debug_assert!(!self.in_task);
        if !self.plain_ready || !self.desc.try_begin_read_only(0) {
            return false;
        }
        self.plain_ready = false;
        self.attr_raw = self.layout.read_only_alone();
        self.nesting = 1;
        true
    }

    /// The common case of committing the outermost level (the caller checked that the
    /// nesting is 1; [`ThreadTx::commit_outermost`] is the general case): a lean
    /// attempt committed on the engine's straight path, inline when it wrote nothing
    /// ([`TxDescriptor::try_commit_inline`](lutra_stm::TxDescriptor::try_commit_inline))
    /// and through one call otherwise
    /// ([`TxDescriptor::try_commit_after_inline`](lutra_stm::TxDescriptor::try_commit_after_inline),
    /// once the inline one has returned `false` for this attempt), as `with_writes`
    /// asks. Returns `false`, having changed nothing the program can see, when any
    /// other case applies.
    #[inline(always)]
    pub(crate) fn try_commit_plain(&mut self, with_writes: bool) -> bool {
        debug_assert_eq!(self.nesting, 1);
        if self.solo_paused {
            return false;
        }
        let committed = if with_writes {
            self.desc.try_commit_after_inline()
        } else {
            self.desc.try_commit_inline()
        };
        if !committed {
            return false;
        }
        // A pending abort dooms the attempt, and a doomed attempt is not lean; nor is
        // one after aborts of its transaction.
        debug_assert!(self.pending.is_none());
        self.close_committed();
        true
    }

    /// The outermost level committed (after any run of aborts was closed): the
    /// transaction is over and counted, and nothing is asked of the next one yet
    /// (`irrevocable_next` is only set outside transactions), so it may begin on the
    /// straight path.
    #[inline(always)]
    fn close_committed(&mut self) {
        self.nesting = 0;
        self.stats.count_first_time_commit();
        self.plain_ready = true;
    }

    /// Makes the thread's next transaction start irrevocable (called outside
    /// transactions).
    pub(crate) fn start_next_irrevocable(&mut self) {
        self.irrevocable_next = true;
        self.plain_ready = false;
    }

    /// The running attempt met an abort of `reason` at `site`: report it
    /// ([`Style::Report`]) or roll back and restart ([`Style::Restart`]). Returns the status for the caller.
    pub(crate) fn after_abort(&mut self, reason: AbortReason, site: Site, style: Style) -> c_int {
        let code = *self.pending.get_or_insert(abort_code(reason, site));
        match style {
            Style::Report => code,
            Style::Restart => self.end_attempt(reason, code, false),
        }
    }

    /// Rolls the running attempt back (if the engine has not already), counts the
    /// abort, then begins the next attempt, or ends the transaction when it must not be
    /// retried. Returns `code`, with `STM_PATH_INSTRUMENTED` when a new attempt runs.
    pub(crate) fn end_attempt(
        &mut self,
        reason: AbortReason,
        code: c_int,
        no_retry: bool,
    ) -> c_int {
        let reason = self.desc.doomed().unwrap_or(reason);
        self.desc.rollback(reason);
        self.pending = None;
        self.stats.count_abort(code);
        if no_retry || self.attributes().no_retry {
            self.nesting = 0;
            self.ended_by_abort = true;
            return code & !STM_PATH_INSTRUMENTED;
        }
        self.desc.wait_before_restart(reason);
        let serialize = self.desc.wait_for_start() == Decision::Serialize;
        self.desc.restart();
        if serialize {
            // A fresh attempt has read nothing: it cannot fail validation; if it was
            // already killed, its first access reports that.
            let _ = self.desc.become_irrevocable();
        }
        self.nesting = 1;
        code | STM_PATH_INSTRUMENTED
    }

    /// `stm_retry`: abandons the running attempt, blocks until a location it read is
    /// changed by another transaction's commit, then begins the next attempt. Returns
    /// the restart status (`LUTRA_ABORT_RETRY` with `STM_PATH_INSTRUMENTED`).
    ///
    /// A solo attempt keeps no read set: it is rolled back and the transaction runs
    /// again at once, instrumented (solo attempts stay off until it commits), so
    /// that its own `stm_retry` knows what to wait for.
    ///
    /// # Errors
    /// `LUTRA_EINVAL` when the program made the attempt irrevocable (nothing it read
    /// can change; it goes on; an attempt that the engine made irrevocable after it
    /// outgrew its sets or kept aborting may retry), or read nothing (nothing could ever wake it; the transaction is then
    /// over, rolled back, as after a `no_retry` abort).
    pub(crate) fn retry(&mut self) -> CapiResult<c_int> {
        if !self.desc.may_retry() {
            return Err(CapiError::invalid(
                "stm_retry in an irrevocable transaction: nothing it read can change",
            ));
        }
        if self.desc.is_solo() {
            self.desc.rollback(AbortReason::Retry);
            self.desc.allow_solo(false);
            self.solo_paused = true;
        } else if self.desc.wait_for_change().is_err() {
            self.pending = None;
            self.nesting = 0;
            self.ended_by_abort = true;
            return Err(CapiError::invalid(
                "stm_retry in a transaction that read nothing: nothing could ever wake it",
            ));
        }
        self.pending = None;
        self.desc.restart();
        self.nesting = 1;
        Ok(LUTRA_ABORT_RETRY | STM_PATH_INSTRUMENTED)
    }

    /// Commits the outermost level. Returns `Ok` when committed, otherwise the status
    /// of the abort path (a failed commit has rolled back: it always restarts or
    /// ends, never stays doomed).
    pub(crate) fn commit_outermost(&mut self) -> Result<(), c_int> {
        match self.desc.commit() {
            Ok(()) => {
                self.pending = None;
                self.stats.close_abort_run();
                self.close_committed();
                if self.solo_paused {
                    self.solo_paused = false;
                    self.desc.allow_solo(true);
                }
                Ok(())
            }
            Err(abort) => Err(self.after_abort(abort.reason(), Site::Commit, Style::Restart)),
        }
    }
}

/// LUTS's STM integration: a task announces the transaction it is about to run, for
/// the scheduler's switch and policies.
#[cold]
fn announce_to_scheduler(site: u32) {
    lutra_sched::set_tx_id(u64::from(site));
}
