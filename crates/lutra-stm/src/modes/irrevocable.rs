//! Irrevocable attempts: attempts that will not abort, for work that cannot be undone.
//!
//! The attempt closes the commit gate (see `gate.rs`), waits until no other descriptor
//! is committing, and re-validates what it read at the current clock. From then on no
//! update can commit but its own, so nothing it read can change, and it wins every
//! conflict: it kills lock holders and waits for them to release. Its status word
//! carries the irrevocable bit, which makes the kill CAS of others fail.
//!
//! An attempt is irrevocable at the program's request ([`Core::become_irrevocable`],
//! an irrevocable start or restart), or by the engine's fallback (`fallback.rs`).
//!
//! # Invariants
//! - At most one attempt per engine is irrevocable (the gate holder).
//! - An irrevocable attempt is never killed, never fails validation and never
//!   outgrows its sets; it ends by committing, or by rolling back only on a panic, an
//!   explicit abort, or (a fallback attempt only) a `retry`.

use crate::attempt::abort::{Abort, AbortReason};
use crate::attempt::descriptor::Core;
use crate::attempt::mode::{Escalation, Mode};
use crate::global::stm::StmInner;
use crate::global::sync::Ordering;

impl Core {
    /// Makes the running attempt irrevocable (see the module header).
    pub(crate) fn become_irrevocable(&mut self, stm: &StmInner) -> Result<(), Abort> {
        // The program asks: from now on the attempt may have done what cannot be
        // undone, even if the fallback had made it irrevocable already.
        if self.escalation == Escalation::Fallback {
            self.escalation = Escalation::Irrevocable;
        }
        self.check_usable(stm)?;
        self.mark_not_straight();
        match self.mode() {
            Mode::Irrevocable | Mode::Serial | Mode::SoloIrrevocable => return Ok(()),
            // Alone in the engine, nothing can make the attempt abort: it is
            // irrevocable as it stands.
            Mode::Solo => {
                self.set_mode(Mode::SoloIrrevocable);
                return Ok(());
            }
            _ => {}
        }
        stm.try_wait_until(|| {
            if stm.gate.try_close(self.slot) {
                return Ok(true);
            }
            self.check_usable(stm).map(|()| false)
        })?;
        self.set_mode(Mode::GateHeld);
        stm.gate.drain(stm, self.slot);
        let now = stm.clock.load(Ordering::SeqCst);
        if !self.validate(stm) {
            self.escalation = Escalation::Irrevocable;
            return Err(self.doom(AbortReason::Irrevocable));
        }
        self.rv = now;
        self.mark_irrevocable(stm)
    }

    /// Closes the gate for an attempt that starts irrevocable, waiting for it to
    /// open; called before the attempt announces itself, which then moves to
    /// `GateHeld` (`Core::start_special`).
    pub(crate) fn close_gate(&mut self, stm: &StmInner) {
        stm.wait_until(|| stm.gate.try_close(self.slot));
    }

    /// Makes a fresh attempt irrevocable before it has read anything, once it holds
    /// the gate ([`Core::close_gate`], which waits for it instead of failing).
    pub(crate) fn start_irrevocable(&mut self, stm: &StmInner) {
        stm.gate.drain(stm, self.slot);
        self.rv = stm.clock.load(Ordering::SeqCst);
        // Only a serial attempt (`serial.rs`) kills an attempt that holds no locks:
        // if it did, this one is doomed (restarting irrevocable), and its first
        // access reports it.
        let _ = self.mark_irrevocable(stm);
    }

    /// Sets the irrevocable bit of the own status by CAS; fails if already killed.
    fn mark_irrevocable(&mut self, stm: &StmInner) -> Result<(), Abort> {
        let marked =
            crate::global::registry::Status::new(self.status.state(), true, self.status.serial());
        let shared = stm.registry.get(self.slot);
        if shared
            .status
            .compare_exchange(
                self.status.encode(),
                marked.encode(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_err()
        {
            self.escalation = Escalation::Irrevocable;
            return Err(self.doom(AbortReason::Killed));
        }
        self.status = marked;
        self.set_mode(Mode::Irrevocable);
        Ok(())
    }
}
