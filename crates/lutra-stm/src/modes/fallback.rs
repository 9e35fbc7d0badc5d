//! The irrevocable fallback: how every transaction finishes, however large it is and
//! however often it loses.
//!
//! Two kinds of transaction could run forever: one whose read or write set outgrows
//! [`Config::max_set_entries`](crate::Config) (every attempt aborts with `Capacity`),
//! and one that keeps losing conflicts (a long reader beside a writer that commits
//! during each of its attempts: no contention manager is even asked, since reads are
//! invisible and the reader fails validation). Both end the same way: the next
//! attempt runs irrevocable. It holds the commit gate (`gate.rs`), so nothing it reads
//! can change and it wins every conflict, and no set limit binds it: it commits.
//!
//! | the attempt that ended | what the next attempt of the transaction is |
//! |---|---|
//! | aborted with `Capacity` | irrevocable, by fallback |
//! | aborted for a conflict (validation, read or write conflict, killed, gave way to an irrevocable transaction), the `irrevocable_after_aborts`-th abort in a row or later | irrevocable, by fallback |
//! | aborted otherwise (explicit abort) | as before (an explicit abort counts in the row, but never starts the fallback: a program that polls with aborts must not hold the gate while it waits) |
//! | a fallback attempt that called `retry` | an ordinary attempt, after the wait |
//! | committed | (the transaction is over) |
//!
//! # Invariants
//! - An irrevocable attempt never aborts for `Capacity`: [`Core::set_limit`] is
//!   unbounded for it (its read set stays bounded by the number of ownership
//!   records, since a compacted read set holds each record once: `access.rs`).
//! - A fallback attempt (escalation `Fallback`, `mode.rs`) is irrevocable and has done
//!   nothing the program cannot undo: the first request of the program to be
//!   irrevocable (output in Lua, `stm_set_irrevocable`) clears the mark, and from then
//!   on the attempt never runs again (it cannot `retry`).
//! - The fallback never overrides a restart that the program asked to be irrevocable:
//!   the mark is only set when no irrevocable restart is pending.

use crate::attempt::abort::AbortReason;
use crate::attempt::descriptor::Core;
use crate::attempt::mode::Escalation;
use crate::global::stm::StmInner;

impl Core {
    /// After an abort for `reason` (already counted in `aborts_in_row`): makes the
    /// next attempt irrevocable when the table above says so.
    pub(crate) fn choose_fallback(&mut self, stm: &StmInner, reason: AbortReason) {
        if self.escalation.is_irrevocable() {
            return;
        }
        let after = stm.config.irrevocable_after_aborts;
        let kept_losing = after > 0
            && self.aborts_in_row >= after
            && (reason.is_conflict() || reason == AbortReason::Irrevocable);
        if reason == AbortReason::Capacity || kept_losing {
            self.escalation = Escalation::Fallback;
        }
    }

    /// The scheduler asked to serialize the transaction: a restart (not the first
    /// attempt) runs irrevocable at the program's side of the table, unless the
    /// fallback already makes it so; a first attempt takes it from its options.
    pub(crate) fn escalate_for_scheduler(&mut self, first: bool) {
        if first {
            self.escalation = Escalation::None;
        } else if !self.escalation.is_irrevocable() {
            self.escalation = Escalation::Irrevocable;
        }
    }

    /// A fallback attempt called `retry`: it waits as any attempt does, and the
    /// transaction runs again as an ordinary attempt (its conditions changed).
    pub(crate) fn end_fallback_for_retry(&mut self) {
        if self.escalation == Escalation::Fallback {
            self.escalation = Escalation::None;
        }
    }

    /// The most entries the read and write sets may hold together in the running
    /// attempt: the engine's limit, or none in an irrevocable attempt.
    #[inline]
    pub(crate) fn set_limit(&self, stm: &StmInner) -> usize {
        if self.mode().is_irrevocable() {
            usize::MAX
        } else {
            stm.config.max_set_entries
        }
    }
}
