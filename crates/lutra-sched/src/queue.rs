//! The run queue: one FIFO shared by all workers (as LUTS's), so that a switch can
//! look for a task running another transaction (or announcing a high enough
//! priority), and pinned tasks are honoured.
//!
//! # Invariants
//! - A task is in the queue at most once, and only in state `RUNNABLE`.
//! - A worker takes only tasks it may run (unpinned, or pinned to it).

use crate::task::TaskCore;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How long an idle worker sleeps before looking again (a safety net: pushes wake
/// sleepers).
const IDLE_RECHECK: Duration = Duration::from_millis(20);

pub(crate) struct RunQueue {
    tasks: Mutex<VecDeque<Arc<TaskCore>>>,
    ready: Condvar,
}

impl RunQueue {
    pub(crate) fn new() -> Self {
        Self {
            tasks: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<Arc<TaskCore>>> {
        self.tasks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Appends a runnable task and wakes a worker that may run it.
    pub(crate) fn push(&self, task: Arc<TaskCore>) {
        let pinned = task.home.is_some();
        self.lock().push_back(task);
        if pinned {
            self.ready.notify_all()
        } else {
            self.ready.notify_one()
        }
    }

    /// Takes the first task `worker` may run, waiting while there is none; `None` once
    /// `stop()` holds.
    pub(crate) fn pop(&self, worker: usize, stop: impl Fn() -> bool) -> Option<Arc<TaskCore>> {
        let mut tasks = self.lock();
        loop {
            if stop() {
                return None;
            }
            if let Some(at) = tasks.iter().position(|task| task.may_run_on(worker)) {
                return tasks.remove(at);
            }
            tasks = self
                .ready
                .wait_timeout(tasks, IDLE_RECHECK)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }

    /// LUTS's switch: if a task that `worker` may run announced a transaction id other
    /// than `tx_id`, moves it to the front and `current` behind everything; otherwise
    /// puts `current` at the front (it runs again next). Returns whether it switched.
    pub(crate) fn switch(&self, worker: usize, current: Arc<TaskCore>, tx_id: u64) -> bool {
        self.switch_where(worker, current, |task| task.tx_id() != tx_id)
    }

    /// The switch with any criterion: if a task that `worker` may run satisfies
    /// `suits`, moves the first such to the front and `current` behind everything;
    /// otherwise puts `current` at the front. Returns whether it switched.
    pub(crate) fn switch_where(
        &self,
        worker: usize,
        current: Arc<TaskCore>,
        suits: impl Fn(&TaskCore) -> bool,
    ) -> bool {
        let mut tasks = self.lock();
        let other = tasks
            .iter()
            .position(|task| task.may_run_on(worker) && suits(task));
        let switched = match other.and_then(|at| tasks.remove(at)) {
            Some(other) => {
                tasks.push_back(current);
                tasks.push_front(other);
                true
            }
            None => {
                tasks.push_front(current);
                false
            }
        };
        drop(tasks);
        self.ready.notify_all();
        switched
    }

    /// Wakes every waiting worker (shutdown, worker count changes).
    pub(crate) fn wake_all(&self) {
        let _tasks = self.lock();
        self.ready.notify_all();
    }
}
