//! The run queues: one per worker, plus a global queue for tasks made runnable outside
//! the workers (tokio's multi-thread scheduler and Go's, in shape; seed 004's LUTS
//! had one shared FIFO, which cost every yield a lock and a system call). Two
//! implementations behind [`TaskQueue`], chosen by the runtime's [`SyncMode`]:
//!
//! | file | algorithm |
//! |------|-----------|
//! | `locked.rs` | each queue a `VecDeque` under its own mutex (uncontended while its worker is busy); sleepers on condition variables (`idle.rs`) |
//! | `transactional.rs` | each queue a linked list of transactional nodes on the runtime's private engine, plus the worker's private buffer of the tasks it yielded; sleepers wait in `retry` |
//! | `idle.rs` | lock mode's sleep/wake protocol: register, re-check, sleep; wake one |
//! | `slots.rs` | the per-worker table, indexed by worker, growing without moving |
//!
//! crossbeam-deque's work-stealing deque does not fit: a pinned task must never be
//! stolen, and LUTS's switch must look through a worker's queue for a task running
//! another transaction; its queues allow neither.
//!
//! # Invariants (both)
//! - A task is in at most one queue, at most once, and only in state `RUNNABLE`.
//! - Worker `w`'s queue holds only tasks `w` may run: unpinned ones, and those pinned
//!   to `w` (whatever thread pushed them). The global queue holds only unpinned tasks.
//!   A pinned task is never taken by another worker (stealing takes unpinned tasks
//!   only).
//! - A yield touches only the worker's own queue (no other worker's data, no system
//!   call): the task goes to the back, the front runs (the same task if the queue was
//!   empty). It wakes nobody: it adds no task to the runtime (but in `tm` mode it may
//!   hand tasks to a worker already asleep, waking it).
//! - A worker sleeps only after it found nothing it may run in its own queue, the
//!   global queue and every other worker's queue, with its registration as a sleeper
//!   ordered before that last look (no lost wake-up: see each implementation). In
//!   `tm` mode a busy worker's private buffer (the tasks it yielded) is not searched:
//!   that worker hands a sleeper half of it at its next slice end.
//! - A worker with a task in its private buffer never sleeps; a leaving one empties
//!   it into the queues.
//! - A push of a task made runnable (spawned, woken, handed over by a leaving worker)
//!   wakes at most one sleeper: for a pinned task its worker, if it sleeps; otherwise
//!   any one, if one sleeps.
//! - A task woken by the task a worker runs may skip the queues: the worker's direct
//!   switch (`worker.rs`) runs it next if the waker's slice parks or ends, and
//!   otherwise pushes it here at the slice's end, as above.
//!
//! # Protocol (a worker's next task)
//! 1. Every `GLOBAL_QUEUE_INTERVAL` slices the global queue first (so tasks woken by
//!    threads are not starved by a worker whose own tasks keep yielding): a yield then
//!    `rotate`s, trading the yielding task for the global queue's front, or handing it
//!    to the global queue when its own queue has another task, so tasks also move
//!    between busy workers. Otherwise the own queue first, then the global queue.
//! 2. Then steal the first unpinned task of another worker's queue.
//! 3. Nothing: register as a sleeper, look again (1, 2), sleep if still nothing.

mod idle;
mod locked;
mod slots;
mod transactional;

/// What the queue's shuttle models share: how they explore.
#[cfg(all(test, feature = "shuttle"))]
mod explore {
    use shuttle::Runner;
    use shuttle::scheduler::{PctScheduler, RandomScheduler};

    /// Schedules explored per scheduler.
    const ITERATIONS: usize = 2000;

    /// Runs `check` under a seeded random scheduler, then a seeded PCT scheduler.
    pub(super) fn explore(seed: u64, check: impl Fn() + Send + Sync + Clone + 'static) {
        Runner::new(
            RandomScheduler::new_from_seed(seed, ITERATIONS),
            shuttle::Config::new(),
        )
        .run(check.clone());
        Runner::new(
            PctScheduler::new_from_seed(seed, 3, ITERATIONS),
            shuttle::Config::new(),
        )
        .run(check);
    }
}

use crate::sync_mode::{SyncDomain, SyncMode};
use crate::task::TaskCore;
use std::collections::VecDeque;
use std::sync::Arc;

/// A worker's private buffer of runnable tasks: held by the worker's run loop (so
/// only that worker ever touches it, without synchronisation) and lent to the
/// queue's owner operations. `tm` mode's fast path keeps there the tasks its worker
/// yielded (see `transactional.rs`); lock mode leaves it empty (its own queue's
/// mutex is already uncontended).
pub(crate) type Private = VecDeque<Arc<TaskCore>>;

/// A yield's turn in a worker's own `tasks`: the front task runs next and `current`
/// goes to the back; `current` runs on when `tasks` is empty.
pub(crate) fn take_turn(tasks: &mut Private, current: Arc<TaskCore>) -> Arc<TaskCore> {
    match tasks.pop_front() {
        Some(next) => {
            tasks.push_back(current);
            next
        }
        None => current,
    }
}

/// A switch in a worker's own `tasks`: the first task that `suits` runs next and
/// `current` goes to the back (`true`); `current` runs on when none suits (`false`).
pub(crate) fn switch_in(
    tasks: &mut Private,
    current: Arc<TaskCore>,
    suits: &dyn Fn(&TaskCore) -> bool,
) -> (Arc<TaskCore>, bool) {
    match tasks.iter().position(|task| suits(task)) {
        Some(at) => {
            let other = tasks.remove(at).expect("a position found in these tasks");
            tasks.push_back(current);
            (other, true)
        }
        None => (current, false),
    }
}

/// The run queues' operations.
pub(crate) trait TaskQueue: Send + Sync {
    /// Queues a task made runnable (spawned or woken): a pinned task in its worker's
    /// queue, another in the queue of `local` (the worker the calling thread is) or
    /// else the global queue; then wakes one sleeping worker that may run it.
    fn push(&self, task: Arc<TaskCore>, local: Option<usize>);

    /// Puts `current` (which `worker` may run) at the back of `worker`'s queue and
    /// takes the front: the task `worker` runs next (`current` if the queue was empty).
    ///
    /// This and the other operations that take `private` are called only by worker
    /// `worker`, with its own buffer.
    fn yield_task(
        &self,
        worker: usize,
        private: &mut Private,
        current: Arc<TaskCore>,
    ) -> Arc<TaskCore>;

    /// The global queue's turn, for an unpinned `current` yielding on `worker`: if the
    /// global queue has a task, `current` takes its place there and it runs next;
    /// otherwise, if `worker`'s queue has one, `current` goes to the global queue
    /// (waking one sleeper) and that task runs next; otherwise `current` runs on.
    fn rotate(&self, worker: usize, private: &mut Private, current: Arc<TaskCore>)
    -> Arc<TaskCore>;

    /// Puts `current` at the back of `worker`'s queue, waking nobody.
    fn requeue(&self, worker: usize, current: Arc<TaskCore>);

    /// LUTS's switch with any criterion: if a task in `worker`'s queue satisfies
    /// `suits`, takes the first such (to run next) and puts `current` at the back;
    /// otherwise `current` runs next. Returns the task to run next and whether it
    /// switched.
    fn switch_where(
        &self,
        worker: usize,
        private: &mut Private,
        current: Arc<TaskCore>,
        suits: &dyn Fn(&TaskCore) -> bool,
    ) -> (Arc<TaskCore>, bool);

    /// The next task for `worker` (the module's protocol), sleeping while there is
    /// none; `None` once `stop()` holds (checked again after every `wake_all`).
    fn next(
        &self,
        worker: usize,
        private: &mut Private,
        global_first: bool,
        stop: &dyn Fn() -> bool,
    ) -> Option<Arc<TaskCore>>;

    /// Queues `task`, which worker `worker` made runnable at the end of a slice (woken
    /// and not run next, or notified while it parked) and may run, as [`push`] with
    /// `local` = `worker` does; `tm` mode keeps it in `private` instead, with no
    /// transaction (see `transactional.rs`).
    ///
    /// [`push`]: TaskQueue::push
    fn push_own(&self, worker: usize, _private: &mut Private, task: Arc<TaskCore>) {
        self.push(task, Some(worker));
    }

    /// The end of a slice on `worker`, before its next task is chosen: `tm` mode moves
    /// the tasks the slice made runnable on `worker` to `private` (see
    /// `transactional.rs`); nothing to do in lock mode.
    fn end_slice(&self, _worker: usize, _private: &mut Private) {}

    /// Worker `worker` leaves: its unpinned tasks (also those of `private`, which it
    /// empties) move to the global queue, and one sleeper is woken (also passing on a
    /// wake-up the leaving worker may have taken).
    fn retire(&self, worker: usize, private: &mut Private);

    /// Wakes every sleeping worker (shutdown, worker count changes).
    fn wake_all(&self);
}

/// The runtime's run queues, in the runtime's synchronisation mode.
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
    pub(crate) fn push(&self, task: Arc<TaskCore>, local: Option<usize>) {
        self.0.push(task, local);
    }

    /// See [`TaskQueue::yield_task`].
    pub(crate) fn yield_task(
        &self,
        worker: usize,
        private: &mut Private,
        current: Arc<TaskCore>,
    ) -> Arc<TaskCore> {
        self.0.yield_task(worker, private, current)
    }

    /// See [`TaskQueue::rotate`].
    pub(crate) fn rotate(
        &self,
        worker: usize,
        private: &mut Private,
        current: Arc<TaskCore>,
    ) -> Arc<TaskCore> {
        self.0.rotate(worker, private, current)
    }

    /// See [`TaskQueue::requeue`].
    pub(crate) fn requeue(&self, worker: usize, current: Arc<TaskCore>) {
        self.0.requeue(worker, current);
    }

    /// LUTS's switch: if a task in `worker`'s queue announced a transaction id other
    /// than `tx_id`, it runs next and `current` goes to the back; otherwise `current`
    /// runs next. Returns the task to run next and whether it switched.
    pub(crate) fn switch(
        &self,
        worker: usize,
        private: &mut Private,
        current: Arc<TaskCore>,
        tx_id: u64,
    ) -> (Arc<TaskCore>, bool) {
        self.0
            .switch_where(worker, private, current, &|task| task.tx_id() != tx_id)
    }

    /// See [`TaskQueue::switch_where`].
    pub(crate) fn switch_where(
        &self,
        worker: usize,
        private: &mut Private,
        current: Arc<TaskCore>,
        suits: impl Fn(&TaskCore) -> bool,
    ) -> (Arc<TaskCore>, bool) {
        self.0.switch_where(worker, private, current, &suits)
    }

    /// See [`TaskQueue::next`].
    pub(crate) fn next(
        &self,
        worker: usize,
        private: &mut Private,
        global_first: bool,
        stop: impl Fn() -> bool,
    ) -> Option<Arc<TaskCore>> {
        self.0.next(worker, private, global_first, &stop)
    }

    /// See [`TaskQueue::push_own`].
    pub(crate) fn push_own(&self, worker: usize, private: &mut Private, task: Arc<TaskCore>) {
        self.0.push_own(worker, private, task);
    }

    /// See [`TaskQueue::end_slice`].
    pub(crate) fn end_slice(&self, worker: usize, private: &mut Private) {
        self.0.end_slice(worker, private);
    }

    /// See [`TaskQueue::retire`].
    pub(crate) fn retire(&self, worker: usize, private: &mut Private) {
        self.0.retire(worker, private);
    }

    /// See [`TaskQueue::wake_all`].
    pub(crate) fn wake_all(&self) {
        self.0.wake_all();
    }
}
