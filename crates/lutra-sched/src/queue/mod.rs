//! The run queue: one FIFO shared by all workers (as LUTS's), so that a switch can
//! look for a task running another transaction (or announcing a high enough
//! priority), and pinned tasks are honoured. Two implementations behind
//! [`TaskQueue`], chosen by the runtime's [`SyncMode`]:
//!
//! | file | algorithm |
//! |------|-----------|
//! | `locked.rs` | a `VecDeque` under a mutex; idle workers wait on a condition variable |
//! | `transactional.rs` | a linked list of transactional nodes on the runtime's private engine; idle workers wait in `retry` |
//!
//! # Invariants (both)
//! - A task is in the queue at most once, and only in state `RUNNABLE`.
//! - A worker takes only tasks it may run (unpinned, or pinned to it).
//! - An idle worker sleeps without spinning, and wakes when a task it may run is
//!   pushed, or after `wake_all` (shutdown, fewer workers) to re-check `stop`.

mod locked;
mod transactional;

use crate::sync_mode::{SyncDomain, SyncMode};
use crate::task::TaskCore;
use std::sync::Arc;

/// The run queue's operations.
pub(crate) trait TaskQueue: Send + Sync {
    /// Appends a runnable task and wakes a worker that may run it.
    fn push(&self, task: Arc<TaskCore>);

    /// Takes the first task `worker` may run, waiting while there is none; `None` once
    /// `stop()` holds (checked again after every `wake_all`).
    fn pop(&self, worker: usize, stop: &dyn Fn() -> bool) -> Option<Arc<TaskCore>>;

    /// LUTS's switch with any criterion: if a task that `worker` may run satisfies
    /// `suits`, moves the first such to the front and `current` behind everything;
    /// otherwise puts `current` at the front (it runs again next). Returns whether it
    /// switched.
    fn switch_where(
        &self,
        worker: usize,
        current: Arc<TaskCore>,
        suits: &dyn Fn(&TaskCore) -> bool,
    ) -> bool;

    /// Wakes every waiting worker (shutdown, worker count changes).
    fn wake_all(&self);
}

/// The runtime's run queue, in the runtime's synchronisation mode.
pub(crate) struct RunQueue(Box<dyn TaskQueue>);

impl RunQueue {
    pub(crate) fn new(domain: &SyncDomain) -> Self {
        match (domain.mode(), domain.engine()) {
            (SyncMode::Transactions, Some(engine)) => Self(Box::new(
                transactional::TransactionalQueue::new(engine.clone()),
            )),
            _ => Self(Box::new(locked::LockedQueue::new())),
        }
    }

    /// See [`TaskQueue::push`].
    pub(crate) fn push(&self, task: Arc<TaskCore>) {
        self.0.push(task);
    }

    /// See [`TaskQueue::pop`].
    pub(crate) fn pop(&self, worker: usize, stop: impl Fn() -> bool) -> Option<Arc<TaskCore>> {
        self.0.pop(worker, &stop)
    }

    /// LUTS's switch: if a task that `worker` may run announced a transaction id other
    /// than `tx_id`, moves it to the front and `current` behind everything; otherwise
    /// puts `current` at the front (it runs again next). Returns whether it switched.
    pub(crate) fn switch(&self, worker: usize, current: Arc<TaskCore>, tx_id: u64) -> bool {
        self.0
            .switch_where(worker, current, &|task| task.tx_id() != tx_id)
    }

    /// See [`TaskQueue::switch_where`].
    pub(crate) fn switch_where(
        &self,
        worker: usize,
        current: Arc<TaskCore>,
        suits: impl Fn(&TaskCore) -> bool,
    ) -> bool {
        self.0.switch_where(worker, current, &suits)
    }

    /// See [`TaskQueue::wake_all`].
    pub(crate) fn wake_all(&self) {
        self.0.wake_all();
    }
}
