//! The commit gate that makes irrevocable transactions possible with invisible reads.
//!
//! An irrevocable transaction cannot be aborted, so nothing it read may change before
//! it commits. It closes the gate; updating transactions then cannot commit (they roll
//! back, holding no locks, and wait for the gate to open before restarting), while
//! read-only transactions go on. At most one transaction holds the gate.
//!
//! # Holder word
//! | value | meaning |
//! |-------|---------|
//! | 0 | open |
//! | slot + 1 | closed by the descriptor in `slot` |
//!
//! # Protocol
//! Irrevocable: 1. CAS the holder word from 0 to its slot. 2. Wait until no other
//! descriptor is `Committing` (full fence before each scan). 3. Validate its reads once
//! more at the current clock: from now on nothing it read can change.
//!
//! Updater: 1. CAS its status `Active → Committing`. 2. Load the holder word: if another
//! holds the gate, roll back. Step 1 of each side is sequentially consistent with step
//! 2 of the other, so one of them always sees the other.

use crate::global::registry::TxState;
use crate::global::stm::StmInner;
use crate::global::sync::{AtomicUsize, Ordering};

pub(crate) struct CommitGate {
    holder: AtomicUsize,
}

impl CommitGate {
    pub(crate) fn new() -> Self {
        Self {
            holder: AtomicUsize::new(0),
        }
    }

    /// Tries to close the gate for `slot`; true if `slot` holds it now.
    pub(crate) fn try_close(&self, slot: usize) -> bool {
        match self
            .holder
            .compare_exchange(0, slot + 1, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => true,
            Err(holder) => holder == slot + 1,
        }
    }

    pub(crate) fn open(&self, slot: usize) {
        let released =
            self.holder
                .compare_exchange(slot + 1, 0, Ordering::SeqCst, Ordering::SeqCst);
        debug_assert!(
            released.is_ok(),
            "slot {slot} opened a gate it did not hold"
        );
    }

    /// Whether a descriptor other than `slot` holds the gate.
    pub(crate) fn closed_by_other(&self, slot: usize) -> bool {
        let holder = self.holder.load(Ordering::SeqCst);
        holder != 0 && holder != slot + 1
    }

    /// Step 2 of the irrevocable side: waits until no other descriptor is committing.
    pub(crate) fn drain(&self, stm: &StmInner, slot: usize) {
        for (other, shared) in stm.registry.in_use() {
            if other != slot {
                stm.wait_until(|| shared.status().state() != TxState::Committing);
            }
        }
    }
}
