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
    /// The straight case of [`Core::become_irrevocable`] (and so of
    /// `Core::become_serial`), inlined: a straight solo attempt is alone, so nothing
    /// can make it abort and it has nothing to wait for; it stays straight
    /// (`SoloSerialStraight`, `mode.rs`). Returns whether it applied (the attempt is
    /// then irrevocable and serial).
    #[inline(always)]
    pub(crate) fn try_become_serial_straight(&mut self) -> bool {
        match self.mode() {
            Mode::SoloStraight => {
                self.set_mode(Mode::SoloSerialStraight);
                true
            }
            Mode::SoloSerialStraight => true,
            _ => false,
        }
    }

    /// Makes the running attempt irrevocable (see the module header).
    pub(crate) fn become_irrevocable(&mut self, stm: &StmInner) -> Result<(), Abort> {
        if self.try_become_serial_straight() {
            return Ok(());
        }
        // What it read cannot be validated: it runs again recorded (`read_only.rs`).
        if let Some(abort) = self.refuse_if_read_only() {
            return Err(abort);
        }
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

#[cfg(test)]
mod tests {
    use crate::attempt::mode::Mode;
    use crate::{Config, Stm, TxDescriptor, TxOptions};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use crate::modes::solo_blocks::tests::solo_descriptor;

    #[test]
    fn a_straight_solo_attempt_becomes_serial_and_stays_straight() {
        let stm = Stm::new(Config::default().with_stats(false));
        let mut desc = solo_descriptor(&stm);
        assert!(desc.try_begin(0) && desc.core.mode() == Mode::SoloStraight);
        desc.become_serial().unwrap();
        assert_eq!(desc.core.mode(), Mode::SoloSerialStraight);
        assert!(desc.is_serial() && desc.is_irrevocable() && !desc.may_retry());
        desc.become_irrevocable().unwrap();
        assert_eq!(
            desc.core.mode(),
            Mode::SoloSerialStraight,
            "asking again changes nothing"
        );
        assert!(desc.try_commit_inline(), "its commit is the straight one");
        assert_eq!(desc.core.mode(), Mode::Settled);
        assert!(!stm.inner.solo.is_held(), "the solo gate is given back");
    }

    #[test]
    fn a_serial_solo_attempt_that_grows_is_irrevocable_but_not_straight() {
        let stm = Stm::new(Config::default().with_stats(false));
        let mut desc = solo_descriptor(&stm);
        assert!(desc.try_begin(0));
        desc.become_serial().unwrap();
        desc.core.mark_not_straight();
        assert_eq!(desc.core.mode(), Mode::SoloIrrevocable);
        assert!(!desc.try_commit_inline());
        desc.commit().unwrap();
        assert!(!stm.inner.solo.is_held());
    }

    /// A thread that registers while a serial solo attempt runs waits until that
    /// attempt has ended (it never runs beside its plain writes); the first
    /// thread's next attempt is no longer solo. Ordered by a handshake: the
    /// newcomer has taken its slot (the live count is 2) before the serial attempt
    /// writes again and commits.
    #[test]
    fn a_newcomer_waits_for_a_serial_solo_attempt() {
        let stm = Stm::new(Config::default().with_stats(false));
        let mut desc = solo_descriptor(&stm);
        let word = Arc::new(AtomicUsize::new(0));
        let registered = Arc::new(AtomicBool::new(false));
        assert!(desc.try_begin(0));
        desc.become_serial().unwrap();
        // The uninstrumented path's first plain write.
        word.store(1, Ordering::Relaxed);
        let newcomer = {
            let (stm, word, registered) = (stm.clone(), word.clone(), registered.clone());
            std::thread::spawn(move || {
                let mut desc = TxDescriptor::new(&stm).unwrap();
                registered.store(true, Ordering::SeqCst);
                desc.begin(TxOptions::default());
                assert!(!desc.is_solo(), "two descriptors: not solo");
                // SAFETY: the word lives in the `Arc`, accessed by transactions of
                // this engine and by the serial attempt.
                let seen = unsafe { desc.load(word.as_ptr()) }.unwrap();
                desc.commit().unwrap();
                // Kept alive: a dropped descriptor would leave the first alone again.
                (seen, desc)
            })
        };
        while stm.inner.registry.live() != 2 {
            std::thread::yield_now();
        }
        assert!(
            !registered.load(Ordering::SeqCst),
            "the newcomer got past the solo gate while a serial solo attempt ran"
        );
        word.store(2, Ordering::Relaxed);
        assert!(desc.try_commit_inline());
        let (seen, _kept) = newcomer.join().unwrap();
        assert_eq!(seen, 2, "the newcomer saw the whole attempt");
        desc.begin(TxOptions::default());
        assert!(!desc.is_solo(), "the next attempt is instrumented");
        desc.become_serial().unwrap();
        assert_eq!(desc.core.mode(), Mode::Serial);
        desc.commit().unwrap();
    }
}
