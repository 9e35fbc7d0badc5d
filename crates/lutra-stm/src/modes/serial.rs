//! Serial attempts: an irrevocable attempt that runs while no other attempt of the
//! engine runs at all, readers included. Code that touches shared memory without the
//! engine's barriers needs it: libitm's serial-irrevocable mode, in which GCC's
//! uninstrumented code and unsafe calls of a `__transaction_relaxed` block run (the
//! C ABI's `_ITM_changeTransactionMode`). A plain irrevocable attempt is not enough
//! there: it only stops updates from committing, and a concurrent reader would see
//! half of a plain, unversioned update.
//!
//! # Protocol
//! `holder` is 0 when no serial attempt runs or waits, else the wanting descriptor's
//! slot + 1.
//!
//! | `holder` | meaning | who moves it out |
//! |---|---|---|
//! | 0 | none | an irrevocable attempt (the commit gate's holder), by store of slot + 1 |
//! | slot + 1 | that attempt runs, or waits to run, alone | the same descriptor, to 0 when the attempt ends |
//!
//! 1. The wanting attempt becomes irrevocable: it holds the commit gate, so at most
//!    one attempt can want to be serial, and it stores its slot + 1 (sequentially
//!    consistent).
//! 2. It kills every other active attempt (they may wait for a location it holds)
//!    and waits until every other descriptor has ended its announcement (epoch 0).
//! 3. An attempt that begins announces its epoch (a store and a full fence, in
//!    `epoch.rs`) and then loads `holder`: if another descriptor holds it, it
//!    withdraws its announcement and waits until `holder` is 0, then starts again.
//!
//! Steps 1–2 and 3 are a Dekker pair on the announcement and `holder`: either the
//! beginner sees `holder` and withdraws, or the serial attempt sees the announcement
//! and waits for it to end. So from step 2's end until the serial attempt ends, no
//! other attempt runs; the release store that ends it (in `finish`) makes its plain
//! writes visible to every attempt that begins after.
//!
//! # Invariants
//! - At most one descriptor holds `holder`, and only while it holds the commit gate.
//! - A solo attempt (`solo.rs`) never meets a serial one: solo needs an engine with a
//!   single descriptor, and the serial holder is one.

use crate::attempt::abort::Abort;
use crate::attempt::descriptor::Core;
use crate::attempt::mode::Mode;
use crate::global::registry::TxState;
use crate::global::stm::StmInner;
use crate::global::sync::{AtomicUsize, Ordering, fence};

/// The engine's serial state: see the module header.
pub(crate) struct SerialGate {
    holder: AtomicUsize,
}

impl SerialGate {
    pub(crate) fn new() -> Self {
        Self {
            holder: AtomicUsize::new(0),
        }
    }

    /// Step 3's check for the descriptor in `slot`, after its announcement: whether
    /// another descriptor's serial attempt runs or waits.
    #[inline(always)]
    pub(crate) fn held_by_other(&self, slot: usize) -> bool {
        let holder = self.holder.load(Ordering::SeqCst);
        holder != 0 && holder != slot + 1
    }

    /// Whether no serial attempt runs or waits.
    pub(crate) fn is_open(&self) -> bool {
        self.holder.load(Ordering::SeqCst) == 0
    }

    /// Ends the serial attempt of `slot` (its writes are done).
    pub(crate) fn leave(&self, slot: usize) {
        debug_assert_eq!(self.holder.load(Ordering::Relaxed), slot + 1);
        // ORDERING: release: the serial attempt's plain writes happen before any
        // attempt that sees the gate open.
        self.holder.store(0, Ordering::Release);
    }
}

impl Core {
    /// Makes the running attempt serial (see the module header): irrevocable, and
    /// alone in the engine once this returns.
    pub(crate) fn become_serial(&mut self, stm: &StmInner) -> Result<(), Abort> {
        if matches!(self.mode(), Mode::Serial) || self.mode().is_solo() {
            // A solo attempt is alone by construction; mark it irrevocable all the same.
            return self.become_irrevocable(stm);
        }
        self.become_irrevocable(stm)?;
        stm.serial.holder.store(self.slot + 1, Ordering::SeqCst);
        self.set_mode(Mode::Serial);
        fence(Ordering::SeqCst);
        let killer = (self.slot, self.status.serial());
        for (slot, shared) in stm.registry.in_use() {
            if slot == self.slot {
                continue;
            }
            let status = shared.status();
            if status.state() == TxState::Active && !status.irrevocable() {
                // A failed kill means the attempt moved on: it commits (and then
                // ends) or is already doomed.
                let _ = shared.kill(status, killer);
            }
        }
        stm.wait_until(|| {
            stm.registry
                .in_use()
                .all(|(slot, shared)| slot == self.slot || shared.epoch.load(Ordering::SeqCst) == 0)
        });
        Ok(())
    }

    /// Step 3 for an attempt that has just announced and found another's serial
    /// attempt: withdraws, waits for it to end, and announces again.
    #[cold]
    #[inline(never)]
    pub(crate) fn wait_for_serial(&self, stm: &StmInner) {
        let shared = stm.registry.get(self.slot);
        while stm.serial.held_by_other(self.slot) {
            stm.epochs.quiesce_in(&shared.epoch);
            stm.wait_until(|| stm.serial.is_open());
            stm.epochs.announce_in(&shared.epoch);
        }
    }
}
