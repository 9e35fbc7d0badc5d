//! Solo attempts: when one descriptor is all an engine has, its transactions run
//! uninstrumented. Reads are plain loads; writes go straight to memory, with their old
//! words in an undo log for an abort; the commit has nothing to publish. This is the
//! serial mode GCC's libitm falls back to with one thread, and seed 000's single-thread
//! shortcut: with nobody to conflict with, the instrumentation only costs.
//!
//! Only descriptors that asked for it ([`TxDescriptor::allow_solo`](crate::TxDescriptor))
//! run solo: the C ABI's threads do. A solo attempt keeps no read set, so it must not
//! `retry` (the C ABI has no `retry`), and it writes words only (no boxed `TVar`).
//!
//! # Protocol
//! `owner` is 0 when no solo attempt runs, else the running one's slot + 1.
//!
//! | `owner` | meaning | who moves it out |
//! |---|---|---|
//! | 0 | no solo attempt | a descriptor alone in the registry, by CAS to its slot + 1 |
//! | slot + 1 | that descriptor's attempt runs solo | the same descriptor, back to 0, when the attempt ends |
//!
//! 1. To run an attempt solo, a descriptor CASes `owner` from 0 to its slot + 1, then
//!    reads the registry's live count: if another descriptor is alive it stores 0
//!    back and runs the attempt instrumented.
//! 2. A new descriptor increments the live count (taking its slot), then waits until
//!    `owner` is 0 before its first attempt.
//! 3. The solo attempt ends (commit or rollback, its writes complete or undone), then
//!    stores 0 (release).
//!
//! Steps 1 and 2 are a Dekker pair on sequentially consistent operations: either the
//! soloist sees the newcomer's count and backs off, or the newcomer sees `owner` set
//! and waits for step 3, whose release store makes every solo write visible to it.
//! Hence no instrumented attempt ever runs beside a solo one, and a solo attempt
//! needs neither versions nor locks: everything that happened before it ended
//! happens before any later attempt of another descriptor begins.

use crate::global::registry::Registry;
use crate::global::sync::{AtomicUsize, Ordering};

/// The engine's solo state: see the module header.
pub(crate) struct SoloGate {
    owner: AtomicUsize,
}

impl SoloGate {
    pub(crate) fn new() -> Self {
        Self {
            owner: AtomicUsize::new(0),
        }
    }

    /// Step 1 for the descriptor in `slot`: whether its next attempt runs solo.
    #[inline]
    pub(crate) fn try_enter(&self, registry: &Registry, slot: usize) -> bool {
        if registry.live() != 1 {
            return false;
        }
        if self
            .owner
            .compare_exchange(0, slot + 1, Ordering::SeqCst, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        // ORDERING: pairs with the live-count increment of `Registry::acquire` (step
        // 2): both sequentially consistent, so one of the two sides sees the other.
        if registry.live() == 1 {
            return true;
        }
        self.owner.store(0, Ordering::Release);
        false
    }

    /// Step 3: the solo attempt has ended.
    #[inline]
    pub(crate) fn exit(&self) {
        // ORDERING: pairs with the acquire load in `is_held`: a newcomer that sees 0
        // sees every write of the ended attempt.
        self.owner.store(0, Ordering::Release);
    }

    /// Whether a solo attempt runs (step 2's test).
    pub(crate) fn is_held(&self) -> bool {
        self.owner.load(Ordering::SeqCst) != 0
    }
}
