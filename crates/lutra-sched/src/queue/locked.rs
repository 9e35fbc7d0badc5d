//! The run queues under locks: each worker's queue a `VecDeque` under its own mutex,
//! the global queue likewise, idle workers asleep on condition variables (`idle.rs`).
//! A worker's mutex is taken by that worker on every yield and by others only to push
//! a task for it or to steal, so while every worker is busy it is uncontended: a
//! yield is two atomic operations and no system call. It keeps no private tasks (the
//! workers' `Private` buffers stay empty).
//!
//! # Protocol (idle wait)
//! `next`: look (own, global, steal); nothing: `idle.prepare`, check `stop`, look
//! again; still nothing: `idle.sleep`, then start over. Pushes queue the task, then
//! `idle.wake` (pinned) or `idle.wake_one`. The ordering argument is in `idle.rs`.

use super::idle::Idle;
use super::slots::Slots;
use super::{Private, TaskQueue, switch_in, take_turn};
use crate::sync::{Mutex, MutexGuard};
use crate::task::TaskCore;
use std::collections::VecDeque;
use std::sync::Arc;

type Tasks = Mutex<VecDeque<Arc<TaskCore>>>;

pub(crate) struct LockedQueue {
    locals: Slots<Tasks>,
    global: Tasks,
    idle: Idle,
}

impl LockedQueue {
    pub(crate) fn new() -> Self {
        Self {
            locals: Slots::new(),
            global: Mutex::new(VecDeque::new()),
            idle: Idle::default(),
        }
    }

    fn local(&self, worker: usize) -> MutexGuard<'_, VecDeque<Arc<TaskCore>>> {
        lock(self.locals.get(worker))
    }

    /// One look for `worker`: own and global queue (in the order asked), then steal.
    fn find(&self, worker: usize, global_first: bool) -> Option<Arc<TaskCore>> {
        let own = || self.local(worker).pop_front();
        let global = || lock(&self.global).pop_front();
        let found = if global_first {
            global().or_else(own)
        } else {
            own().or_else(global)
        };
        found.or_else(|| self.steal(worker))
    }

    /// The first unpinned task of another worker's queue, trying the workers after
    /// `worker` in turn.
    fn steal(&self, worker: usize) -> Option<Arc<TaskCore>> {
        let workers = self.locals.len();
        (1..workers).find_map(|offset| {
            let mut tasks = self.local((worker + offset) % workers);
            let at = tasks.iter().position(|task| task.home.is_none())?;
            tasks.remove(at)
        })
    }
}

impl TaskQueue for LockedQueue {
    fn push(&self, task: Arc<TaskCore>, local: Option<usize>) {
        match (task.home, local) {
            (Some(home), _) => {
                self.local(home).push_back(task);
                self.idle.wake(home);
            }
            (None, Some(worker)) => {
                self.local(worker).push_back(task);
                self.idle.wake_one();
            }
            (None, None) => {
                lock(&self.global).push_back(task);
                self.idle.wake_one();
            }
        }
    }

    fn yield_task(
        &self,
        worker: usize,
        _private: &mut Private,
        current: Arc<TaskCore>,
    ) -> Arc<TaskCore> {
        take_turn(&mut self.local(worker), current)
    }

    fn rotate(
        &self,
        worker: usize,
        _private: &mut Private,
        current: Arc<TaskCore>,
    ) -> Arc<TaskCore> {
        let mut global = lock(&self.global);
        if let Some(next) = global.pop_front() {
            global.push_back(current);
            return next;
        }
        drop(global);
        let Some(next) = self.local(worker).pop_front() else {
            return current;
        };
        lock(&self.global).push_back(current);
        self.idle.wake_one();
        next
    }

    fn yield_to_global(
        &self,
        worker: usize,
        _private: &mut Private,
        current: Arc<TaskCore>,
    ) -> (Arc<TaskCore>, bool) {
        let Some(next) = lock(&self.global).pop_front() else {
            return (take_turn(&mut self.local(worker), current), false);
        };
        self.local(worker).push_back(current);
        (next, true)
    }

    fn requeue(&self, worker: usize, current: Arc<TaskCore>) {
        self.local(worker).push_back(current);
    }

    fn switch_where(
        &self,
        worker: usize,
        _private: &mut Private,
        current: Arc<TaskCore>,
        suits: &dyn Fn(&TaskCore) -> bool,
    ) -> (Arc<TaskCore>, bool) {
        switch_in(&mut self.local(worker), current, suits)
    }

    fn next(
        &self,
        worker: usize,
        private: &mut Private,
        global_first: bool,
        stop: &dyn Fn() -> bool,
    ) -> Option<Arc<TaskCore>> {
        debug_assert!(private.is_empty(), "lock mode keeps no private tasks");
        loop {
            if stop() {
                return None;
            }
            if let Some(task) = self.find(worker, global_first) {
                return Some(task);
            }
            self.idle.prepare(worker);
            if stop() {
                self.idle.cancel(worker);
                return None;
            }
            if let Some(task) = self.find(worker, false) {
                self.idle.cancel(worker);
                return Some(task);
            }
            self.idle.sleep(worker);
        }
    }

    fn retire(&self, worker: usize, private: &mut Private) {
        debug_assert!(private.is_empty(), "lock mode keeps no private tasks");
        let unpinned: VecDeque<_> = {
            let mut tasks = self.local(worker);
            let (pinned, unpinned) = tasks.drain(..).partition(|task| task.home.is_some());
            *tasks = pinned;
            unpinned
        };
        lock(&self.global).extend(unpinned);
        self.idle.wake_one();
    }

    fn has_tasks(&self, worker: usize) -> bool {
        !self.local(worker).is_empty()
    }

    fn wake_all(&self) {
        self.idle.wake_all();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
