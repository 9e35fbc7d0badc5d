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
//! - A worker resting (`rest.rs`) has handed its unpinned tasks to the global queue
//!   and has none pinned to it queued; a push of one ends its rest, as `wake_all` does.
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
//!    A task pushed to the global queue from outside the workers (a timer's or a
//!    host's wake-up) also makes every worker look at the global queue first at its
//!    slices' ends, every other slice end until it finds it empty (`worker.rs`,
//!    prompt wake-ups); a yield then trades the yielding task for the global queue's
//!    front (`yield_to_global`), the yielding task staying on its worker.
//! 2. Then steal the first unpinned task of another worker's queue.
//! 3. Nothing: register as a sleeper, look again (1, 2), sleep if still nothing.

pub(crate) mod idle;
mod locked;
mod slots;
pub(crate) use slots::Slots;
mod transactional;

/// What the queue's shuttle models share: how they explore.
#[cfg(all(test, feature = "shuttle"))]
pub(crate) mod explore {
    use shuttle::Runner;
    use shuttle::scheduler::{PctScheduler, RandomScheduler};

    /// Runs `check` under a seeded random scheduler, then a seeded PCT scheduler,
    /// `iterations` schedules each.
    pub(crate) fn explore(
        seed: u64,
        iterations: usize,
        check: impl Fn() + Send + Sync + Clone + 'static,
    ) {
        Runner::new(
            RandomScheduler::new_from_seed(seed, iterations),
            shuttle::Config::new(),
        )
        .run(check.clone());
        Runner::new(
            PctScheduler::new_from_seed(seed, 3, iterations),
            shuttle::Config::new(),
        )
        .run(check);
    }
}

use crate::rest::{RestEnd, Resting};
use crate::runtime::OutsideWake;
use crate::sync_mode::{SyncDomain, SyncMode};
use crate::task::TaskCore;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

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

    /// A yield while a task woken from outside the workers may wait in the global
    /// queue (see `worker.rs`, prompt wake-ups): the global queue's front runs next
    /// and `current` goes to the back of `worker`'s own queue (`true`); with the
    /// global queue empty, as [`yield_task`](TaskQueue::yield_task) (`false`).
    fn yield_to_global(
        &self,
        worker: usize,
        private: &mut Private,
        current: Arc<TaskCore>,
    ) -> (Arc<TaskCore>, bool);

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

    /// The end of a slice on `worker` whose seat a monitor retook meanwhile
    /// (`seat.rs`): the calling thread no longer owns `worker`'s private buffer, so
    /// `tm` mode pushes the tasks the slice made runnable on this thread to the shared
    /// lists instead (as pushes from `worker` outside a slice); nothing to do in lock
    /// mode.
    fn end_slice_lost(&self, _worker: usize) {}

    /// Worker `worker` leaves: its unpinned tasks (also those of `private`, which it
    /// empties) move to the global queue, and one sleeper is woken (also passing on a
    /// wake-up the leaving worker may have taken).
    fn retire(&self, worker: usize, private: &mut Private);

    /// Whether `worker`'s own queue holds a task (for a resting worker: a pinned one,
    /// see `rest.rs`), judged in the queue's synchronisation (not a hint).
    fn has_tasks(&self, worker: usize) -> bool;

    /// Wakes every sleeping worker (shutdown, worker count changes).
    fn wake_all(&self);
}

/// The runtime's run queues, in the runtime's synchronisation mode, and the workers
/// resting from them (`rest.rs`).
pub(crate) struct RunQueue {
    queue: Box<dyn TaskQueue>,
    resting: Resting,
    /// Unpinned tasks pushed to the global queue by a thread that is no worker of
    /// this runtime (a timer, a host, the thread that spawns): a count that only
    /// grows, read by the workers at every slice's end (see `worker.rs`, prompt
    /// wake-ups). A hint: the queue itself says what is there.
    injected: AtomicU64,
    /// Called after each push counted in `injected` (`Builder::on_outside_wake`).
    on_injected: Option<OutsideWake>,
}

impl RunQueue {
    pub(crate) fn new(domain: &SyncDomain) -> Self {
        let queue: Box<dyn TaskQueue> = match (domain.mode(), domain.engine()) {
            (SyncMode::Transactions, Some(engine)) => {
                Box::new(transactional::TransactionalQueue::new(engine.clone()))
            }
            _ => Box::new(locked::LockedQueue::new()),
        };
        Self {
            queue,
            resting: Resting::default(),
            injected: AtomicU64::new(0),
            on_injected: None,
        }
    }

    /// The same queues, calling `hook` after each push counted in `injected`.
    pub(crate) fn on_injected(mut self, hook: Option<OutsideWake>) -> Self {
        self.on_injected = hook;
        self
    }

    /// How many unpinned tasks threads outside the workers have pushed so far (see
    /// [`RunQueue::injected`]'s field).
    #[inline]
    pub(crate) fn injected(&self) -> u64 {
        // ORDERING: a hint only (a stale count delays the look at the global queue by
        // one slice; the look itself is synchronised by the queue).
        self.injected.load(Ordering::Relaxed)
    }

    /// The resting workers (`rest.rs`).
    pub(crate) fn resting(&self) -> &Resting {
        &self.resting
    }

    /// See [`TaskQueue::push`]; a task pinned to a resting worker also ends its rest.
    /// A push from outside the workers (`local` is `None`) of an unpinned task also
    /// counts in [`RunQueue::injected`], after the task is queued.
    pub(crate) fn push(&self, task: Arc<TaskCore>, local: Option<usize>) {
        let home = task.home;
        self.queue.push(task, local);
        match (home, local) {
            (Some(home), _) => self.resting.wake(home),
            // ORDERING: see `injected`; the task is in the global queue already.
            (None, None) => {
                self.injected.fetch_add(1, Ordering::Relaxed);
                if let Some(OutsideWake(hook)) = &self.on_injected {
                    hook();
                }
            }
            (None, Some(_)) => {}
        }
    }

    /// See [`TaskQueue::yield_to_global`].
    pub(crate) fn yield_to_global(
        &self,
        worker: usize,
        private: &mut Private,
        current: Arc<TaskCore>,
    ) -> (Arc<TaskCore>, bool) {
        self.queue.yield_to_global(worker, private, current)
    }

    /// See [`TaskQueue::yield_task`].
    pub(crate) fn yield_task(
        &self,
        worker: usize,
        private: &mut Private,
        current: Arc<TaskCore>,
    ) -> Arc<TaskCore> {
        self.queue.yield_task(worker, private, current)
    }

    /// See [`TaskQueue::rotate`].
    pub(crate) fn rotate(
        &self,
        worker: usize,
        private: &mut Private,
        current: Arc<TaskCore>,
    ) -> Arc<TaskCore> {
        self.queue.rotate(worker, private, current)
    }

    /// See [`TaskQueue::requeue`].
    pub(crate) fn requeue(&self, worker: usize, current: Arc<TaskCore>) {
        self.queue.requeue(worker, current);
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
        self.queue
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
        self.queue.switch_where(worker, private, current, &suits)
    }

    /// See [`TaskQueue::next`].
    pub(crate) fn next(
        &self,
        worker: usize,
        private: &mut Private,
        global_first: bool,
        stop: impl Fn() -> bool,
    ) -> Option<Arc<TaskCore>> {
        self.queue.next(worker, private, global_first, &stop)
    }

    /// See [`TaskQueue::push_own`].
    pub(crate) fn push_own(&self, worker: usize, private: &mut Private, task: Arc<TaskCore>) {
        self.queue.push_own(worker, private, task);
    }

    /// See [`TaskQueue::end_slice`].
    pub(crate) fn end_slice(&self, worker: usize, private: &mut Private) {
        self.queue.end_slice(worker, private);
    }

    /// See [`TaskQueue::end_slice_lost`].
    #[cold]
    pub(crate) fn end_slice_lost(&self, worker: usize) {
        self.queue.end_slice_lost(worker);
    }

    /// See [`TaskQueue::retire`].
    pub(crate) fn retire(&self, worker: usize, private: &mut Private) {
        self.queue.retire(worker, private);
    }

    /// See [`TaskQueue::wake_all`]; also ends every rest.
    pub(crate) fn wake_all(&self) {
        self.queue.wake_all();
        self.resting.wake_all();
    }

    /// Worker `worker` rests until `deadline` (`rest.rs`): `next`, the task it chose
    /// to run next, if any, and its other unpinned tasks go to the global queue, then
    /// it waits, unless its own queue holds a (pinned) task or `stop()` holds; a push
    /// of a task pinned to it or [`wake_all`](Self::wake_all) ends the rest early.
    pub(crate) fn rest(
        &self,
        worker: usize,
        private: &mut Private,
        next: Option<Arc<TaskCore>>,
        deadline: Instant,
        stop: impl Fn() -> bool,
    ) -> RestEnd {
        if let Some(task) = next {
            self.queue.requeue(worker, task);
        }
        self.queue.retire(worker, private);
        self.resting
            .rest(worker, deadline, || stop() || self.queue.has_tasks(worker))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A deadline no test waits for: these tests never depend on one.
    const FOREVER: Duration = Duration::from_secs(3600);

    fn task(id: u64, home: Option<usize>) -> Arc<TaskCore> {
        Arc::new(TaskCore::new(id, home, None))
    }

    /// `rest.rs`'s invariants, in both modes: a worker about to rest hands its unpinned
    /// tasks (the one it chose to run next after them) to the global queue, where
    /// worker 0 takes them in order, and does not rest while a task pinned to it is
    /// queued, which stays in its own queue.
    #[test]
    fn a_resting_worker_hands_its_unpinned_tasks_over_and_keeps_its_pinned_ones() {
        for mode in [SyncMode::Locks, SyncMode::Transactions] {
            let queue = RunQueue::new(&SyncDomain::new(mode));
            let (mut private0, mut private1) = (Private::new(), Private::new());
            queue.push(task(1, None), Some(1));
            queue.push(task(2, Some(1)), Some(1));
            let deadline = Instant::now() + FOREVER;
            let end = queue.rest(1, &mut private1, Some(task(3, None)), deadline, || false);
            assert_eq!(end, RestEnd::Withdrawn, "{mode:?}: a pinned task is queued");
            let next = |worker, private: &mut Private| {
                queue
                    .next(worker, private, false, || false)
                    .map(|task| task.id())
            };
            assert_eq!(next(0, &mut private0), Some(1), "{mode:?}");
            assert_eq!(next(0, &mut private0), Some(3), "{mode:?}");
            assert_eq!(next(1, &mut private1), Some(2), "{mode:?}");
        }
    }

    /// Nothing queued for it: the rest lasts until a push of a task pinned to the
    /// resting worker, not of one it may only steal.
    #[test]
    fn a_pinned_push_ends_a_rest() {
        for mode in [SyncMode::Locks, SyncMode::Transactions] {
            let queue = Arc::new(RunQueue::new(&SyncDomain::new(mode)));
            let resting = {
                let queue = queue.clone();
                std::thread::spawn(move || {
                    let deadline = Instant::now() + FOREVER;
                    queue.rest(1, &mut Private::new(), None, deadline, || false)
                })
            };
            while queue.resting.resting() == 0 {
                std::thread::yield_now();
            }
            queue.push(task(1, None), None);
            queue.push(task(2, Some(1)), None);
            assert_eq!(resting.join().unwrap(), RestEnd::Woken, "{mode:?}");
        }
    }
}
