//! Priority against invisible reads (seed 003, Section 6): engine hooks that count the
//! conflicts a contention manager never sees — a reader overtaken by a writer's
//! commit fails validation — and escalate high-priority transactions past them, in
//! two ways:
//!
//! - per transaction (by descriptor slot): after `k` validation aborts in a row, the
//!   transaction's next attempt runs irrevocable, which no transaction can abort;
//! - per task ([`TaskMemory`], optional): once a high-priority task has lost to
//!   validation, its next transactions start irrevocable for a window of `W` of them,
//!   the lost transaction's restart first. Descriptors are cached per worker thread,
//!   not per task, so this memory is keyed by the scheduler's task
//!   ([`TaskIdentity`]). It removes what the first way cannot: the first loss of
//!   every transaction.
//!
//! # Protocol, per transaction (by descriptor slot)
//! 1. `on_abort` with [`AbortReason::Validation`]: count it (and apart when the
//!    transaction's priority is at least `min_priority`); add one to the slot's
//!    streak; if the streak reached `k` and the priority is at least `min_priority`,
//!    mark the slot.
//! 2. `on_start` of a restart on a marked slot: unmark it and answer
//!    [`Decision::Serialize`] (unless the wrapped hooks ask to wait or switch first).
//! 3. A committed attempt, or a transaction's first `on_start`, clears the slot.
//!
//! # Protocol, per task (the decaying window)
//! A task of priority at least `min_priority` (as [`TaskIdentity`] reports it) has a
//! window length `W` (0: nothing remembered), `left` escalated starts to go, and
//! `clean` optimistic commits since its last loss or decay.
//! 1. A validation loss: `W` doubles, within `first..=max` (0 becomes `first`);
//!    `left = W`; `clean = 0`.
//! 2. `on_start` of any attempt while `left > 0` (and the wrapped hooks and step 2
//!    above answer `Proceed`): `left -= 1`, answer [`Decision::Serialize`].
//! 3. A commit of an optimistic attempt (not irrevocable): `clean += 1`; once
//!    `clean` reaches `half_life`, `W` halves and `clean = 0`; at `W = 0` (and no
//!    start left) the task is forgotten.
//!
//! `half_life` is the line between persistent and sporadic contention. A task that
//! loses once every `g` optimistic transactions, `g < half_life`, doubles `W` with
//! every loss up to `max`, and then loses about once per `max + g` transactions
//! instead of once per `g`: its inversions fall by `(max + g) / g`. A task that loses
//! less often than once per `half_life` keeps a short window (`first`, the cost of a
//! sporadic loss), and once contention stops its memory fades to nothing.
//!
//! # Invariants
//! - The wrapped hooks see every call, and their answer wins unless it is `Proceed`:
//!   escalation only turns a `Proceed` into `Serialize`.
//! - Only transactions whose priority is at least `min_priority` escalate (the
//!   transaction's for the slot streak, its task's for the window): an irrevocable
//!   transaction beats every other, so escalating a low one would invert priorities
//!   outside the manager's sight.
//! - Slots at or beyond the capacity given to [`ValidationEscalation::new`] are
//!   counted but never escalate.
//! - A task's window is touched only on its own thread (`on_start`, `on_abort`,
//!   `on_commit`, which may take locks), never in `on_attempt_end`. Transactions
//!   outside tasks, and tasks below `min_priority`, never touch the task table.

use lutra_stm::{AbortReason, Decision, TxEvent, TxHooks};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Validation aborts counted by a [`ValidationEscalation`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ValidationLosses {
    /// Every validation abort.
    pub aborts: u64,
    /// Validation aborts of transactions whose priority is at least `min_priority`.
    pub high_aborts: u64,
    /// Restarts made irrevocable by the per-transaction streak.
    pub escalations: u64,
    /// Attempts made irrevocable by a task's window ([`TaskMemory`]).
    pub window_escalations: u64,
}

/// The task running the calling thread's transaction, as a scheduler knows it.
pub struct TaskKey {
    /// The task's id, unique within its scheduler.
    pub id: u64,
    /// The task's scheduling priority (compared with `min_priority`).
    pub priority: i64,
}

/// Who runs the current transaction: the key of [`TaskMemory`]. Called on the
/// transaction's own thread, from hooks that may take locks.
pub trait TaskIdentity: Send + Sync {
    /// The current task, or `None` outside any task (then nothing is remembered).
    fn current_task(&self) -> Option<TaskKey>;
}

/// Per-task escalation memory: the window's bounds (see the module protocol) and
/// who the current task is.
pub struct TaskMemory {
    /// Who runs the current transaction.
    pub identity: Arc<dyn TaskIdentity>,
    /// The window after a first loss, in transactions (at least 1).
    pub first: u32,
    /// The longest window (at least `first`).
    pub max: u32,
    /// Optimistic commits without a loss after which the window halves (at least 1).
    pub half_life: u32,
}

#[derive(Debug, Default)]
struct SlotState {
    streak: AtomicU32,
    marked: AtomicBool,
}

/// One task's window (module protocol, per task).
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    length: u32,
    left: u32,
    clean: u32,
}

/// The windows of the high-priority tasks that lost lately.
struct TaskWindows {
    memory: TaskMemory,
    windows: Mutex<HashMap<u64, Window>>,
}

impl TaskWindows {
    fn new(memory: TaskMemory) -> Self {
        assert!(
            memory.first >= 1 && memory.max >= memory.first && memory.half_life >= 1,
            "a task window needs 1 <= first <= max and 1 <= half_life"
        );
        Self {
            memory,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// The current task, if it has at least `min_priority`.
    fn high_task(&self, min_priority: i64) -> Option<u64> {
        let task = self.memory.identity.current_task()?;
        (task.priority >= min_priority).then_some(task.id)
    }

    fn with_window<R>(&self, task: u64, update: impl FnOnce(&mut Window) -> R) -> R {
        // A panic elsewhere cannot leave a window half updated: every update is a
        // few integer stores.
        let mut windows = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
        let window = windows.entry(task).or_default();
        let result = update(window);
        if window.length == 0 && window.left == 0 {
            windows.remove(&task);
        }
        result
    }

    /// Step 1: a loss opens (or doubles) the task's window.
    fn lost(&self, task: u64) {
        let (first, max) = (self.memory.first, self.memory.max);
        self.with_window(task, |window| {
            window.length = window.length.saturating_mul(2).clamp(first, max);
            window.left = window.length;
            window.clean = 0;
        });
    }

    /// Step 2: whether the task's next attempt is escalated (taking it from the
    /// window).
    fn take_escalation(&self, task: u64) -> bool {
        self.with_window(task, |window| {
            let escalate = window.left > 0;
            window.left = window.left.saturating_sub(u32::from(escalate));
            escalate
        })
    }

    /// Step 3: an optimistic commit decays the task's window.
    fn committed_optimistically(&self, task: u64) {
        let half_life = self.memory.half_life;
        self.with_window(task, |window| {
            window.clean += 1;
            if window.clean >= half_life {
                window.length /= 2;
                window.clean = 0;
            }
        });
    }
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
    tasks: Option<TaskWindows>,
    aborts: AtomicU64,
    high_aborts: AtomicU64,
    escalations: AtomicU64,
    window_escalations: AtomicU64,
}

impl ValidationEscalation {
    /// Wraps `inner`. A transaction of priority at least `min_priority` runs its next
    /// attempt irrevocable after `after` validation aborts in a row (`None`: never,
    /// only count). `slots` is the number of descriptor slots tracked (the engine's
    /// `Config::max_descriptors` covers them all). Tasks are not remembered unless
    /// [`ValidationEscalation::with_task_memory`] asks.
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
            tasks: None,
            aborts: AtomicU64::new(0),
            high_aborts: AtomicU64::new(0),
            escalations: AtomicU64::new(0),
            window_escalations: AtomicU64::new(0),
        }
    }

    /// Also remembers, per task, the high-priority tasks that lost to validation and
    /// starts their next transactions irrevocable (the module's decaying window).
    ///
    /// # Panics
    /// Unless `1 <= memory.first <= memory.max` and `1 <= memory.half_life`.
    pub fn with_task_memory(mut self, memory: TaskMemory) -> Self {
        self.tasks = Some(TaskWindows::new(memory));
        self
    }

    /// The counts so far. Any time.
    pub fn losses(&self) -> ValidationLosses {
        ValidationLosses {
            aborts: self.aborts.load(Ordering::Relaxed),
            high_aborts: self.high_aborts.load(Ordering::Relaxed),
            escalations: self.escalations.load(Ordering::Relaxed),
            window_escalations: self.window_escalations.load(Ordering::Relaxed),
        }
    }

    fn high(&self, event: &TxEvent) -> bool {
        event.priority >= self.min_priority
    }

    /// The current task, if task memory is on and the task has high priority.
    fn high_task(&self) -> Option<(&TaskWindows, u64)> {
        let tasks = self.tasks.as_ref()?;
        Some((tasks, tasks.high_task(self.min_priority)?))
    }

    /// Step 1 of both protocols.
    fn count_validation(&self, event: &TxEvent) {
        // ORDERING: statistics and per-slot state touched by the slot's own thread;
        // Relaxed suffices.
        self.aborts.fetch_add(1, Ordering::Relaxed);
        if !self.high(event) {
            return;
        }
        self.high_aborts.fetch_add(1, Ordering::Relaxed);
        if let Some((tasks, task)) = self.high_task() {
            tasks.lost(task);
        }
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

    /// Step 2 of the per-transaction protocol: takes the slot's mark.
    fn take_slot_mark(&self, slot: usize) -> bool {
        let marked = self
            .slots
            .get(slot)
            .is_some_and(|slot| slot.marked.load(Ordering::Relaxed));
        if marked {
            self.clear(slot);
            self.escalations.fetch_add(1, Ordering::Relaxed);
        }
        marked
    }

    /// Step 2 of the per-task protocol: takes one start from the task's window.
    fn take_window(&self) -> bool {
        let escalate = self
            .high_task()
            .is_some_and(|(tasks, task)| tasks.take_escalation(task));
        if escalate {
            self.window_escalations.fetch_add(1, Ordering::Relaxed);
        }
        escalate
    }
}

impl TxHooks for ValidationEscalation {
    fn on_start(&self, event: &TxEvent) -> Decision {
        let decision = self.inner.on_start(event);
        if event.aborts == 0 {
            self.clear(event.slot);
        }
        if decision != Decision::Proceed || event.irrevocable {
            return decision;
        }
        if self.take_slot_mark(event.slot) || self.take_window() {
            return Decision::Serialize;
        }
        decision
    }

    fn on_commit(&self, event: &TxEvent) {
        if !event.irrevocable
            && let Some((tasks, task)) = self.high_task()
        {
            tasks.committed_optimistically(task);
        }
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
