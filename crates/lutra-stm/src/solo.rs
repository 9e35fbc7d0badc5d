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
//! `enabled` is set once a descriptor of the engine has been allowed to run solo.
//!
//! | `owner` | meaning | who moves it out |
//! |---|---|---|
//! | 0 | no solo attempt | a descriptor alone in the registry, by a store of its slot + 1 |
//! | slot + 1 | that descriptor's attempt runs solo | the same descriptor, back to 0, when the attempt ends |
//!
//! 1. To run an attempt solo, a descriptor that reads a live count of 1 stores its
//!    slot + 1 in `owner`, then reads the live count again: if another descriptor is
//!    alive it stores 0 back and runs the attempt instrumented.
//! 2. A new descriptor increments the live count (taking its slot); if `enabled`, it
//!    runs the heavy asymmetric fence (`sync::asymmetric`); then it waits until
//!    `owner` is 0 before its first attempt.
//! 3. The solo attempt ends (commit or rollback, its writes complete or undone), then
//!    stores 0 (release).
//!
//! Steps 1 and 2 are a Dekker pair. Where the kernel offers `membarrier`, step 1
//! orders its store before its second read with the light asymmetric fence (free on
//! the processor), paired with step 2's heavy one, so that a solo begin has no
//! atomic read-modify-write and no fence, and a newcomer pays one system call.
//! Elsewhere step 1's store is sequentially consistent (an exchange), as are step
//! 2's increment and read. A newcomer skips the heavy fence only when `enabled` was
//! still clear: then its increment came before the `enabled` store in the
//! sequentially consistent order, and so before any soloist's second read, which
//! sees the newcomer.
//!
//! Either way the soloist sees the newcomer's count and backs off, or the newcomer
//! sees `owner` set and waits for step 3, whose release store makes every solo
//! write visible to it. Hence no instrumented attempt ever runs beside a solo one,
//! and a solo attempt needs neither versions nor locks: everything that happened
//! before it ended happens before any later attempt of another descriptor begins.
//! Only the live descriptor of an engine with one writes `owner` (step 1), so no
//! two soloists race for it.

use crate::registry::Registry;
use crate::sync::{AtomicBool, AtomicUsize, Ordering, asymmetric};

/// The engine's solo state: see the module header.
pub(crate) struct SoloGate {
    owner: AtomicUsize,
    /// Some descriptor of the engine may run solo: newcomers fence (step 2).
    enabled: AtomicBool,
    /// Step 1 uses the light asymmetric fence (`membarrier` is available).
    asymmetric: bool,
}

impl SoloGate {
    pub(crate) fn new() -> Self {
        Self {
            owner: AtomicUsize::new(0),
            enabled: AtomicBool::new(false),
            asymmetric: asymmetric::available(),
        }
    }

    /// A descriptor of the engine was allowed to run solo: from now on newcomers
    /// fence in step 2.
    pub(crate) fn enable(&self) {
        // ORDERING: sequentially consistent, paired with the newcomer's read in
        // `fence_newcomer` (see the module header).
        if !self.enabled.load(Ordering::Relaxed) {
            self.enabled.store(true, Ordering::SeqCst);
        }
    }

    /// Step 1 for the descriptor in `slot`: whether its next attempt runs solo.
    #[inline(always)]
    pub(crate) fn try_enter(&self, registry: &Registry, slot: usize) -> bool {
        if registry.live() != 1 {
            return false;
        }
        if self.asymmetric {
            self.owner.store(slot + 1, Ordering::Relaxed);
            asymmetric::light();
        } else {
            self.owner.store(slot + 1, Ordering::SeqCst);
        }
        // ORDERING: pairs with the live-count increment of `Registry::acquire` and
        // the fence of `fence_newcomer` (step 2).
        if registry.live() == 1 {
            return true;
        }
        self.owner.store(0, Ordering::Release);
        false
    }

    /// Step 3: the solo attempt has ended.
    #[inline(always)]
    pub(crate) fn exit(&self) {
        // ORDERING: pairs with the acquire load in `is_held`: a newcomer
        // that sees 0 sees every write of the ended attempt.
        self.owner.store(0, Ordering::Release);
    }

    /// Step 2's fence, for a descriptor that has just taken its slot (its increment
    /// of the live count done), before it tests [`SoloGate::is_held`].
    pub(crate) fn fence_newcomer(&self) {
        if self.asymmetric && self.enabled.load(Ordering::SeqCst) {
            asymmetric::heavy();
        }
    }

    /// Whether a solo attempt runs (step 2's test).
    pub(crate) fn is_held(&self) -> bool {
        // ORDERING: acquires step 3's release store.
        self.owner.load(Ordering::SeqCst) != 0
    }
}
