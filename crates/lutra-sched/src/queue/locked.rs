//! The run queue under a lock: a `VecDeque` in a mutex, idle workers waiting on a
//! condition variable (luaproc's `mutex_sched` and `cond_wakeup_worker`).
//!
//! # Protocol (idle wait)
//! A worker that finds nothing it may run waits on `ready` (releasing the mutex) with
//! a timeout of `IDLE_RECHECK` as a safety net; pushes notify one waiter (all for a
//! pinned task, which only one worker may take), switches and `wake_all` notify all.

use super::TaskQueue;
use crate::task::TaskCore;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How long an idle worker sleeps before looking again (a safety net: pushes wake
/// sleepers).
const IDLE_RECHECK: Duration = Duration::from_millis(20);

pub(crate) struct LockedQueue {
    tasks: Mutex<VecDeque<Arc<TaskCore>>>,
    ready: Condvar,
}

impl LockedQueue {
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
}

impl TaskQueue for LockedQueue {
    fn push(&self, task: Arc<TaskCore>) {
        let pinned = task.home.is_some();
        self.lock().push_back(task);
        if pinned {
            self.ready.notify_all()
        } else {
            self.ready.notify_one()
        }
    }

    fn pop(&self, worker: usize, stop: &dyn Fn() -> bool) -> Option<Arc<TaskCore>> {
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

    fn switch_where(
        &self,
        worker: usize,
        current: Arc<TaskCore>,
        suits: &dyn Fn(&TaskCore) -> bool,
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

    fn wake_all(&self) {
        let _tasks = self.lock();
        self.ready.notify_all();
    }
}
