//! An attempt's begin and end: what `Core` does when an attempt starts (announced,
//! solo or irrevocable), when it is doomed, and when it ends (idle, quiescent,
//! counted, its gates given back). The modes it moves through are `mode.rs`'s.
//!
//! # Invariants
//! - While an attempt is active, the own status word is `Active` (or `Killed` by
//!   another transaction, or `Committing` inside `commit`) with this attempt's serial,
//!   and the own epoch is announced (a solo attempt announces none: no one else runs).
//! - Outside attempts, the descriptor holds no lock, no gate, no epoch announcement.

use crate::api::hooks::TxEvent;
use crate::attempt::abort::{Abort, AbortReason};
use crate::attempt::descriptor::Core;
use crate::attempt::mode::{Escalation, Mode};
use crate::global::epoch::Release;
use crate::global::registry::SharedDescriptor;
use crate::global::stats::Outcome;
use crate::global::stm::StmInner;
use crate::global::sync::Ordering;
use crate::global::ticks::Stamp;
use crate::sets::write_set::Block;
use std::time::Duration;

/// Read sets that grew past this capacity are given back when the attempt ends, so
/// one huge transaction does not keep its memory for the life of the descriptor.
const READ_SET_KEPT: usize = 1 << 16;

impl Core {
    /// The attempt's mode (`mode.rs`).
    #[inline(always)]
    pub(crate) fn mode(&self) -> Mode {
        self.reads.front.mode
    }

    /// Moves the attempt to `mode`: only along the transitions of `mode.rs`'s table.
    #[inline(always)]
    pub(crate) fn set_mode(&mut self, mode: Mode) {
        self.reads.front.mode = mode;
    }

    #[inline]
    pub(crate) fn shared<'s>(&self, _stm: &'s StmInner) -> &'s SharedDescriptor {
        // SAFETY: the pointer came from `stm.registry.get(self.slot)` of the engine
        // this descriptor holds (an `Arc`), whose registry never moves or shrinks.
        unsafe { self.shared.as_ref() }
    }

    /// Publishes the transaction's age (its first attempt's snapshot, fixed for
    /// every attempt) and priority for contention managers, which read them only
    /// from an attempt found holding a record: called before an attempt takes its
    /// first lock (`Core::acquire`), whose compare-and-swap publishes them.
    #[inline]
    pub(crate) fn publish_age_and_priority(&self, stm: &StmInner) {
        let shared = self.shared(stm);
        shared
            .priority
            .store(self.options.priority as u64, Ordering::Relaxed);
        shared.age.store(self.age, Ordering::Relaxed);
    }

    /// What the hooks are told about the current transaction.
    pub(crate) fn event(&self, reason: Option<AbortReason>) -> TxEvent {
        TxEvent {
            site: self.options.site,
            slot: self.slot,
            aborts: self.aborts_in_row,
            reason,
            elapsed: self.last_elapsed,
            priority: self.options.priority,
            irrevocable: self.options.irrevocable || self.escalation.is_irrevocable(),
        }
    }

    /// Begins an attempt. The straight case (a first attempt, or one after a `retry`,
    /// on an engine without hooks, not irrevocable; solo or instrumented) is inlined
    /// and straight; everything else goes through [`Core::start_special`].
    #[inline]
    pub(crate) fn start_attempt(&mut self, stm: &StmInner) {
        // One test of the bytes or-ed together: an attempt running, an abort to give
        // way to, an irrevocable start or restart, hooks.
        let special = self.mode().active_bits()
            | u8::from(self.last_abort.is_some())
            | u8::from(self.options.irrevocable)
            | self.escalation as u8
            | u8::from(stm.hooks_active);
        if special != 0 {
            self.start_special(stm);
            return;
        }
        // An attempt after aborts (a `retry` restart) is not straight: the end that
        // counts its transaction's aborts is the full one.
        let straight = !stm.config.stats & (self.aborts_in_row == 0);
        if self.solo_allowed && stm.solo.try_enter(&stm.registry, self.slot) {
            self.start_solo(stm);
            self.set_mode(if straight {
                Mode::SoloStraight
            } else {
                Mode::Solo
            });
        } else {
            self.announce(stm);
            self.set_mode(if straight {
                Mode::Straight
            } else {
                Mode::Instrumented
            });
        }
        if stm.config.stats {
            self.started_at = Some(Stamp::now());
        }
    }

    /// [`Core::start_attempt`] for every case but the straight one.
    #[cold]
    #[inline(never)]
    fn start_special(&mut self, stm: &StmInner) {
        assert!(
            !self.mode().is_active(),
            "a transaction attempt is already active on this descriptor"
        );
        if self.last_abort.is_some() {
            self.wait_after_abort(stm);
        }
        let irrevocable = self.options.irrevocable || self.escalation.is_irrevocable();
        let solo =
            self.solo_allowed && !irrevocable && stm.solo.try_enter(&stm.registry, self.slot);
        let read_only = self.take_read_only(irrevocable, solo);
        if solo {
            self.start_solo(stm);
            if stm.config.stats {
                self.started_at = Some(Stamp::now());
            }
            // Nothing but the solo gate to give back at its end, which the straight
            // end does too; after an abort, the full end also forgets the abort.
            let straight =
                stm.straight_ends && self.last_abort.is_none() && self.aborts_in_row == 0;
            self.set_mode(if straight {
                Mode::SoloStraight
            } else {
                Mode::Solo
            });
            return;
        }
        if irrevocable {
            // Before announcing: a serial attempt (which holds the gate) waits for
            // every announced attempt to end.
            self.close_gate(stm);
        }
        self.announce(stm);
        self.set_mode(Mode::Instrumented);
        if stm.config.stats {
            self.started_at = Some(Stamp::now());
        }
        if read_only {
            // Straight as a solo attempt is, above.
            let straight =
                stm.straight_ends && self.last_abort.is_none() && self.aborts_in_row == 0;
            self.start_read_only(straight);
        }
        if irrevocable {
            self.set_mode(Mode::GateHeld);
            self.start_irrevocable(stm);
        }
    }

    /// Makes the attempt active and visible: a new serial in the own status word, the
    /// epoch announced, the snapshot taken.
    #[inline(always)]
    fn announce(&mut self, stm: &StmInner) {
        self.publish_active(stm);
        if stm.serial.held_by_other(self.slot) {
            self.wait_for_serial(stm);
        }
        self.become_active(stm);
    }

    /// The visible half of [`Core::announce`]: a new serial in the own status word,
    /// then the epoch announced (step 3 of the serial protocol, `serial.rs`, checks
    /// the serial gate after it).
    #[inline(always)]
    pub(crate) fn publish_active(&mut self, stm: &StmInner) {
        let shared = self.shared(stm);
        shared.size.store(0, Ordering::Relaxed);
        self.status = self.status.next_active();
        // ORDERING: the full fence in `announce_in` orders this store before the
        // attempt's first read; killers find the attempt through a record it locked
        // later (a CAS), which publishes this store to them.
        shared.status.store(self.status.encode(), Ordering::Release);
        stm.epochs.announce_in(&shared.epoch);
    }

    /// Whether the inlined access paths may run: the read set is open (see
    /// [`Core::reads`]).
    #[inline(always)]
    pub(crate) fn fast_access(&self) -> bool {
        self.reads.is_open()
    }

    /// The private half of [`Core::announce`], once no serial attempt stands in the
    /// way: the attempt runs from its snapshot on.
    #[inline(always)]
    pub(crate) fn become_active(&mut self, stm: &StmInner) {
        self.doomed = None;
        self.reads.open();
        self.rv = stm.clock.load(Ordering::SeqCst);
    }

    /// Begins a solo attempt (`solo.rs`): no other descriptor exists, so there is no
    /// one to announce an epoch or a snapshot to; the access paths go to the solo
    /// branches of `load_slow` and `store_slow`.
    #[inline]
    pub(crate) fn start_solo(&mut self, stm: &StmInner) {
        self.solo_undo.open();
        self.publish_solo(stm);
    }

    /// [`Core::start_solo`] with an undo log that opens without the allocator.
    #[inline(always)]
    pub(crate) fn start_solo_ready(&mut self, stm: &StmInner) {
        self.solo_undo.open_ready();
        self.publish_solo(stm);
    }

    /// The solo half of an attempt's start: a new serial in the own status word, so
    /// that [`Stm::quiesce`](crate::Stm::quiesce) waits for the attempt as for any
    /// other. Nothing else is published: no other descriptor exists to read the
    /// read set's size, and the epoch stays quiescent. The read set is closed (every
    /// attempt's end closes it) and stays so. The caller sets the solo mode.
    #[inline(always)]
    fn publish_solo(&mut self, stm: &StmInner) {
        debug_assert!(!self.reads.is_open() && self.reads.len() == 0);
        self.status = self.status.next_active();
        self.shared(stm)
            .status
            .store(self.status.encode(), Ordering::Release);
        self.doomed = None;
    }

    /// Before an attempt that follows an abort: gives way to the irrevocable
    /// transaction or the killer the last attempt lost to.
    #[cold]
    fn wait_after_abort(&self, stm: &StmInner) {
        match self.last_abort {
            Some(AbortReason::Irrevocable) if !self.escalation.is_irrevocable() => {
                stm.wait_until(|| !stm.gate.closed_by_other(self.slot));
            }
            Some(AbortReason::Killed) => self.wait_for_killer(stm),
            _ => {}
        }
    }

    /// After being killed, waits until the killer's attempt has ended. Restarting at
    /// once would re-lock (under encounter-time locking) the record the killer waits
    /// for before it can take it, and be killed again, forever: the killer wins by
    /// the contention manager's order, so let it finish. Holds nothing while waiting.
    fn wait_for_killer(&self, stm: &StmInner) {
        let shared = self.shared(stm);
        let (killer_slot, killer_serial) = shared.killer_of(stm, self.status.serial());
        stm.wait_for_attempt_end(killer_slot, killer_serial);
    }

    pub(crate) fn doom(&mut self, reason: AbortReason) -> Abort {
        self.set_mode(self.mode().doomed());
        self.reads.close();
        if self.doomed.is_none() {
            self.doomed = Some(reason);
        }
        Abort::new(self.doomed.unwrap_or(reason))
    }

    /// Fails if the attempt is doomed, was killed, or is not running.
    #[inline]
    pub(crate) fn check_usable(&mut self, stm: &StmInner) -> Result<(), Abort> {
        if let Some(reason) = self.doomed {
            return Err(Abort::new(reason));
        }
        if !self.mode().is_active() {
            return Err(Abort::new(AbortReason::Misuse));
        }
        // Only a kill changes the status word from outside, and killers find their
        // victim through a record it has locked: an attempt holding no lock (every
        // commit-time-locking attempt before its commit) need not look.
        if !self.locks.is_empty()
            && self.shared(stm).status.load(Ordering::Acquire) != self.status.encode()
        {
            return Err(self.doom(AbortReason::Killed));
        }
        Ok(())
    }

    #[inline]
    pub(crate) fn record_allocation(
        &mut self,
        addr: usize,
        size: usize,
        release: Release,
        tvar_value: bool,
    ) {
        // A block for the program (not a boxed value) keeps the attempt straight:
        // the straight end forgets it, a rollback releases it.
        if tvar_value {
            self.mark_not_straight();
        }
        self.allocations.push(Block {
            addr,
            size,
            release,
            tvar_value,
        });
    }

    /// What ends every attempt, once its write and lock sets are empty: the inlined
    /// paths closed, the read set emptied, the own status word idle and the epoch
    /// quiescent.
    #[inline(always)]
    pub(crate) fn go_idle(&mut self, stm: &StmInner) {
        self.reads.close();
        self.reads.clear();
        self.publish_idle(stm);
        stm.epochs.quiesce_in(&self.shared(stm).epoch);
    }

    /// The own status word reads idle.
    #[inline(always)]
    pub(crate) fn publish_idle(&mut self, stm: &StmInner) {
        self.status = self.status.idle();
        self.shared(stm)
            .status
            .store(self.status.encode(), Ordering::Release);
    }

    /// Ends the attempt: clears the sets, goes idle and quiescent, counts it. A straight
    /// attempt that committed has nothing else to do; any other goes on through
    /// [`Core::finish_special`].
    #[inline]
    pub(crate) fn finish(&mut self, stm: &StmInner, outcome: Result<(), AbortReason>) {
        self.allocations.clear();
        self.writes.clear();
        self.locks.clear();
        self.go_idle(stm);
        let straight_commit = self.mode().is_straight() && outcome.is_ok();
        if !straight_commit {
            self.finish_special(stm, outcome);
        } else if self.mode().is_solo() {
            self.end_solo(stm);
        }
        // A commit leaves nothing to give way to (`record_outcome`); one after
        // aborts leaves them counted until the next `prepare`.
        let settled =
            straight_commit || (outcome.is_ok() && stm.straight_ends && self.aborts_in_row == 0);
        self.set_mode(if settled { Mode::Settled } else { Mode::Idle });
    }

    /// Ends a solo attempt: closes its undo window, then gives back the solo gate.
    #[inline]
    pub(crate) fn end_solo(&mut self, stm: &StmInner) {
        self.solo_undo.close();
        stm.solo.exit();
    }

    /// [`Core::end_solo`] with an undo log that closes without the allocator.
    #[inline(always)]
    pub(crate) fn end_solo_ready(&mut self, stm: &StmInner) {
        self.solo_undo.close_window();
        stm.solo.exit();
    }

    /// The rest of [`Core::finish`] for an attempt that was not straight or did not
    /// commit: what it holds beyond its sets, its statistics and the hooks.
    #[cold]
    #[inline(never)]
    fn finish_special(&mut self, stm: &StmInner, outcome: Result<(), AbortReason>) {
        self.reads.clear_and_shrink(READ_SET_KEPT);
        self.frees.clear();
        self.lent = 0;
        if !self.private.is_empty() {
            self.forget_private();
        }
        // The gate is never kept between attempts, not even for an irrevocable restart
        // (which closes it again when it begins): kept through the backoff and the
        // hooks' decisions, it would hold back every update commit meanwhile.
        let mode = self.mode();
        if mode == Mode::Serial {
            stm.serial.leave(self.slot);
        }
        if mode.holds_gate() {
            stm.gate.open(self.slot);
        }
        if mode.is_solo() {
            self.end_solo(stm);
        }
        let was_irrevocable = mode.is_irrevocable();
        self.record_outcome(stm, outcome, was_irrevocable);
        if stm.hooks_active {
            stm.config.hooks.on_attempt_end(&self.event(outcome.err()));
        }
    }

    /// The attempt takes on something its end must release or report: it is no
    /// longer straight (see `mode.rs`).
    #[inline]
    pub(crate) fn mark_not_straight(&mut self) {
        self.set_mode(self.mode().not_straight());
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn record_outcome(
        &mut self,
        stm: &StmInner,
        outcome: Result<(), AbortReason>,
        irrevocable: bool,
    ) {
        let aborts_before = self.aborts_in_row;
        match outcome {
            Ok(()) => {
                self.escalation = Escalation::None;
                self.last_abort = None;
            }
            // A retry is no abort, but it ends the attempt: what the next attempt
            // must give way to is only what ended the one just before it. A fallback
            // that retried runs again as it would have first (`fallback.rs`).
            Err(AbortReason::Retry) => {
                self.last_abort = None;
                self.end_fallback_for_retry();
            }
            Err(reason) => {
                self.aborts_in_row = self.aborts_in_row.saturating_add(1);
                self.last_abort = Some(reason);
                self.choose_read_only(reason);
                self.choose_fallback(stm, reason);
            }
        }
        let Some(started_at) = self.started_at.take() else {
            self.last_elapsed = Duration::ZERO;
            return;
        };
        self.last_elapsed = started_at.elapsed();
        let outcome = Outcome {
            result: outcome,
            irrevocable,
            aborts_before,
            elapsed: self.last_elapsed,
        };
        self.shared(stm).stats.count(self.options.site, &outcome);
    }
}
