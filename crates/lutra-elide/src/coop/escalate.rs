//! Priority against invisible reads (seed 003, Section 6): engine hooks that count the
//! conflicts a contention manager never sees — a reader overtaken by a writer's
//! commit fails validation — and escalate a high-priority transaction that keeps
//! losing that way: after `k` validation aborts in a row its next attempt runs
//! irrevocable, which no transaction can abort.
//!
//! # Protocol (per transaction, by descriptor slot)
//! 1. `on_abort` with [`AbortReason::Validation`]: count it (and apart when the
//!    transaction's priority is at least `min_priority`); add one to the slot's
//!    streak; if the streak reached `k` and the priority is at least `min_priority`,
//!    mark the slot.
//! 2. `on_start` of a restart on a marked slot: unmark it and answer
//!    [`Decision::Serialize`] (unless the wrapped hooks ask to wait or switch first).
//! 3. A committed attempt, or a transaction's first `on_start`, clears the slot.
//!
//! # Invariants
//! - The wrapped hooks see every call, and their answer wins unless it is `Proceed`:
//!   escalation only turns a `Proceed` into `Serialize`.
//! - Only transactions whose priority is at least `min_priority` escalate: an
//!   irrevocable transaction beats every other, so escalating a low one would invert
//!   priorities outside the manager's sight.
//! - Slots at or beyond the capacity given to [`ValidationEscalation::new`] are
//!   counted but never escalate.

use lutra_stm::{AbortReason, Decision, TxEvent, TxHooks};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// Validation aborts counted by a [`ValidationEscalation`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ValidationLosses {
    /// Every validation abort.
    pub aborts: u64,
    /// Validation aborts of transactions whose priority is at least `min_priority`.
    pub high_aborts: u64,
    /// Restarts that were made irrevocable.
    pub escalations: u64,
}

#[derive(Debug, Default)]
struct SlotState {
    streak: AtomicU32,
    marked: AtomicBool,
}

/// Hooks that wrap a scheduler's hooks, count validation aborts and escalate
/// high-priority transactions (see the module protocol).
///
/// ```
/// use lutra_elide::coop::ValidationEscalation;
/// use lutra_stm::{AbortReason, Decision, NoHooks, TxEvent, TxHooks};
/// let hooks = ValidationEscalation::new(std::sync::Arc::new(NoHooks), Some(1), 5, 64);
/// let lost = TxEvent { slot: 3, priority: 5, aborts: 1, reason: Some(AbortReason::Validation), ..TxEvent::default() };
/// hooks.on_abort(&lost);
/// assert_eq!(hooks.on_start(&TxEvent { slot: 3, priority: 5, aborts: 1, ..TxEvent::default() }), Decision::Serialize);
/// assert_eq!(hooks.losses().escalations, 1);
/// ```
pub struct ValidationEscalation {
    inner: Arc<dyn TxHooks>,
    after: Option<u32>,
    min_priority: i64,
    slots: Box<[SlotState]>,
    aborts: AtomicU64,
    high_aborts: AtomicU64,
    escalations: AtomicU64,
}

impl ValidationEscalation {
    /// Wraps `inner`. A transaction of priority at least `min_priority` runs its next
    /// attempt irrevocable after `after` validation aborts in a row (`None`: never,
    /// only count). `slots` is the number of descriptor slots tracked (the engine's
    /// `Config::max_descriptors` covers them all).
    pub fn new(
        inner: Arc<dyn TxHooks>,
        after: Option<u32>,
        min_priority: i64,
        slots: usize,
    ) -> Self {
        Self {
            inner,
            after,
            min_priority,
            slots: (0..slots).map(|_| SlotState::default()).collect(),
            aborts: AtomicU64::new(0),
            high_aborts: AtomicU64::new(0),
            escalations: AtomicU64::new(0),
        }
    }

    /// The counts so far. Any time.
    pub fn losses(&self) -> ValidationLosses {
        ValidationLosses {
            aborts: self.aborts.load(Ordering::Relaxed),
            high_aborts: self.high_aborts.load(Ordering::Relaxed),
            escalations: self.escalations.load(Ordering::Relaxed),
        }
    }

    fn high(&self, event: &TxEvent) -> bool {
        event.priority >= self.min_priority
    }

    /// Step 1 of the protocol.
    fn count_validation(&self, event: &TxEvent) {
        // ORDERING: statistics and per-slot state touched by the slot's own thread;
        // Relaxed suffices.
        self.aborts.fetch_add(1, Ordering::Relaxed);
        if !self.high(event) {
            return;
        }
        self.high_aborts.fetch_add(1, Ordering::Relaxed);
        let (Some(after), Some(slot)) = (self.after, self.slots.get(event.slot)) else {
            return;
        };
        if slot.streak.fetch_add(1, Ordering::Relaxed) + 1 >= after {
            slot.marked.store(true, Ordering::Relaxed);
        }
    }

    fn clear(&self, slot: usize) {
        if let Some(slot) = self.slots.get(slot) {
            slot.streak.store(0, Ordering::Relaxed);
            slot.marked.store(false, Ordering::Relaxed);
        }
    }
}

impl TxHooks for ValidationEscalation {
    fn on_start(&self, event: &TxEvent) -> Decision {
        let decision = self.inner.on_start(event);
        if event.aborts == 0 {
            self.clear(event.slot);
        }
        let marked = self
            .slots
            .get(event.slot)
            .is_some_and(|slot| slot.marked.load(Ordering::Relaxed));
        if decision != Decision::Proceed || !marked {
            return decision;
        }
        self.clear(event.slot);
        self.escalations.fetch_add(1, Ordering::Relaxed);
        Decision::Serialize
    }

    fn on_commit(&self, event: &TxEvent) {
        self.inner.on_commit(event);
    }

    fn on_abort(&self, event: &TxEvent) -> Decision {
        if event.reason == Some(AbortReason::Validation) {
            self.count_validation(event);
        }
        self.inner.on_abort(event)
    }

    fn on_attempt_end(&self, event: &TxEvent) {
        if event.reason.is_none() {
            self.clear(event.slot);
        }
        self.inner.on_attempt_end(event);
    }

    fn start_priority(&self, event: &TxEvent) -> Option<i64> {
        self.inner.start_priority(event)
    }
}
