//! Sleeping and waking idle workers in lock mode: a worker sleeps only after it found
//! nothing to run anywhere, and each new task wakes at most one sleeper (the one
//! that may run it, for a pinned task). Pushers read a counter, so while no worker
//! sleeps a push costs one fence and one load, and no system call. Resting workers
//! (`rest.rs`, both modes) sleep on a set of their own by the same protocol, with a
//! deadline (`sleep_until`).
//!
//! # Invariants
//! - `sleeping` equals `state.sleepers.len()`; both change only under `state`.
//! - A worker is in `sleepers` from `prepare` until a waker removes it (`wake_one`,
//!   `wake`, `wake_all`) or it withdraws (`cancel`, or `sleep_until` at its deadline);
//!   `sleep` returns once it is out.
//!
//! # Protocol (sleep, no lost wake-up: "register, then re-check")
//! Worker `w`, having found nothing:
//! 1. `prepare(w)`: add `w` to `sleepers`, increment `sleeping`, fence (SeqCst).
//! 2. Re-check every queue it may take from (and the stop condition).
//! 3. Found something: `cancel(w)` and run it. Found nothing: `sleep(w)`.
//!
//! Pusher of a task:
//! 1. Push it (a queue write under that queue's mutex).
//! 2. Fence (SeqCst), load `sleeping`; if non-zero: under `state`, remove one sleeper
//!    that may run the task (any for `wake_one`, only `w` for `wake(w)`) and notify
//!    its condition variable.
//!
//! ORDERING: the worker's increment then re-check and the pusher's push then load are
//! a store-then-load pair on each side, both separated by SeqCst fences: at least one
//! side sees the other. Either the re-check finds the task, or the pusher sees
//! `sleeping > 0` and, under `state`, finds `w` registered (or another sleeper, which
//! will re-check everything when it wakes). A worker woken for a task someone else
//! took re-checks and sleeps again; one that wakes and leaves (fewer workers) passes a
//! wake-up on (`queue/mod.rs`, retiring).
//!
//! Stopping: the stop condition is stored (SeqCst) before `wake_all`, which takes
//! `state`. A worker registered before that is woken by it; one that registers after
//! sees the condition in step 2.

#[cfg(feature = "shuttle")]
use shuttle::sync::atomic::{AtomicUsize, Ordering, fence};
#[cfg(feature = "shuttle")]
use shuttle::sync::{Condvar, Mutex, MutexGuard};
use std::sync::Arc;
#[cfg(not(feature = "shuttle"))]
use std::sync::atomic::{AtomicUsize, Ordering, fence};
#[cfg(not(feature = "shuttle"))]
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// The sleepers and their condition variables.
#[derive(Default)]
struct State {
    /// Workers registered as sleeping, in the order they registered.
    sleepers: Vec<usize>,
    /// One condition variable per worker index (grown on demand).
    parkers: Vec<Arc<Condvar>>,
}

impl State {
    fn parker(&mut self, worker: usize) -> Arc<Condvar> {
        while self.parkers.len() <= worker {
            self.parkers.push(Arc::new(Condvar::new()));
        }
        self.parkers[worker].clone()
    }

    /// Removes `worker` from `sleepers`; whether it was there.
    fn remove(&mut self, worker: usize) -> bool {
        let at = self.sleepers.iter().position(|&w| w == worker);
        at.map(|at| self.sleepers.remove(at)).is_some()
    }
}

/// The idle workers of one lock-mode run queue.
#[derive(Default)]
pub(crate) struct Idle {
    state: Mutex<State>,
    sleeping: AtomicUsize,
}

impl Idle {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Worker step 1: registers `worker` as about to sleep.
    pub(crate) fn prepare(&self, worker: usize) {
        let mut state = self.lock();
        debug_assert!(!state.sleepers.contains(&worker), "registered twice");
        state.sleepers.push(worker);
        self.sleeping.fetch_add(1, Ordering::SeqCst);
        drop(state);
        // ORDERING: pairs with the fence in `waker_needed`: the increment above comes
        // before the caller's re-check of the queues.
        fence(Ordering::SeqCst);
    }

    /// Worker step 3, found something: withdraws (a waker may have removed it
    /// already; that wake-up is then spent on this worker, which is awake).
    pub(crate) fn cancel(&self, worker: usize) {
        self.withdraw(&mut self.lock(), worker);
    }

    /// Takes `worker` out of `sleepers`, if a waker has not already.
    fn withdraw(&self, state: &mut State, worker: usize) {
        if state.remove(worker) {
            self.sleeping.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Worker step 3, found nothing: sleeps until a waker removes it.
    pub(crate) fn sleep(&self, worker: usize) {
        let mut state = self.lock();
        let parker = state.parker(worker);
        while state.sleepers.contains(&worker) {
            state = parker
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// Worker step 3, found nothing, for a sleep that also ends at `deadline` (a
    /// resting worker, `rest.rs`): `true` once a waker removed `worker`, `false` if
    /// the deadline came first (it then withdraws).
    pub(crate) fn sleep_until(&self, worker: usize, deadline: Instant) -> bool {
        let mut state = self.lock();
        let parker = state.parker(worker);
        while state.sleepers.contains(&worker) {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                self.withdraw(&mut state, worker);
                return false;
            };
            state = parker
                .wait_timeout(state, left)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
        true
    }

    /// How many workers are registered as sleeping.
    #[cfg(test)]
    pub(crate) fn sleepers(&self) -> usize {
        self.sleeping.load(Ordering::SeqCst)
    }

    /// Pusher step 2, first half: whether any worker may be asleep.
    fn waker_needed(&self) -> bool {
        // ORDERING: pairs with the fence in `prepare`: the caller's push comes before
        // this load.
        fence(Ordering::SeqCst);
        self.sleeping.load(Ordering::SeqCst) > 0
    }

    /// Pusher step 2 for a task any worker may run: wakes one sleeper, if any.
    pub(crate) fn wake_one(&self) {
        if !self.waker_needed() {
            return;
        }
        let mut state = self.lock();
        if let Some(worker) = state.sleepers.pop() {
            self.sleeping.fetch_sub(1, Ordering::SeqCst);
            state.parker(worker).notify_one();
        }
    }

    /// Pusher step 2 for a task pinned to `worker`: wakes it, if it sleeps.
    pub(crate) fn wake(&self, worker: usize) {
        if !self.waker_needed() {
            return;
        }
        let mut state = self.lock();
        if state.remove(worker) {
            self.sleeping.fetch_sub(1, Ordering::SeqCst);
            state.parker(worker).notify_one();
        }
    }

    /// Wakes every sleeper (stopping: see the module's protocol).
    pub(crate) fn wake_all(&self) {
        let mut state = self.lock();
        let woken = std::mem::take(&mut state.sleepers);
        self.sleeping.fetch_sub(woken.len(), Ordering::SeqCst);
        for worker in woken {
            state.parker(worker).notify_one();
        }
    }
}

/// Model checks of the protocol on shuttle's scheduler (every atomic access, lock and
/// wait of `Idle` is a scheduling point): workers that look in a queue, register, look
/// again and sleep exactly as `locked.rs`'s `next` does, and a pusher that queues
/// tasks (some pinned) and wakes as `locked.rs`'s `push` does. The worker that takes
/// the last task stops everyone. A lost wake-up leaves a task queued and every worker
/// asleep: shuttle reports the deadlock and the check fails.
#[cfg(all(test, feature = "shuttle"))]
mod model {
    use super::*;
    use crate::queue::explore::explore;
    use shuttle::sync::atomic::AtomicBool;
    use shuttle::thread;

    /// A run queue of tasks, each `None` (any worker) or `Some(w)` (pinned to `w`).
    struct Model {
        queue: Mutex<Vec<Option<usize>>>,
        idle: Idle,
        stop: AtomicBool,
        taken: AtomicUsize,
        total: usize,
        recheck: bool,
    }

    impl Model {
        /// Takes the first task `worker` may run.
        fn find(&self, worker: usize) -> Option<Option<usize>> {
            let mut queue = self.queue.lock().unwrap();
            let at = queue
                .iter()
                .position(|home| home.is_none_or(|home| home == worker))?;
            Some(queue.remove(at))
        }

        /// Runs a task: the last one stops every worker (stop, then `wake_all`).
        fn run(&self, worker: usize, task: Option<usize>) {
            assert!(
                task.is_none_or(|home| home == worker),
                "a pinned task moved"
            );
            if self.taken.fetch_add(1, Ordering::SeqCst) + 1 == self.total {
                self.stop.store(true, Ordering::SeqCst);
                self.idle.wake_all();
            }
        }

        /// `locked.rs`'s `next` and the run loop around it.
        fn worker(&self, worker: usize) {
            loop {
                if self.stop.load(Ordering::SeqCst) {
                    return;
                }
                if let Some(task) = self.find(worker) {
                    self.run(worker, task);
                    continue;
                }
                self.idle.prepare(worker);
                if self.stop.load(Ordering::SeqCst) {
                    self.idle.cancel(worker);
                    return;
                }
                if self.recheck
                    && let Some(task) = self.find(worker)
                {
                    self.idle.cancel(worker);
                    self.run(worker, task);
                    continue;
                }
                self.idle.sleep(worker);
            }
        }

        /// `locked.rs`'s `push`.
        fn push(&self, task: Option<usize>) {
            self.queue.lock().unwrap().push(task);
            match task {
                Some(home) => self.idle.wake(home),
                None => self.idle.wake_one(),
            }
        }
    }

    /// Two workers and a pusher of `tasks`.
    fn workers_and_pusher(tasks: &'static [Option<usize>], recheck: bool) {
        let model = Arc::new(Model {
            queue: Mutex::new(Vec::new()),
            idle: Idle::default(),
            stop: AtomicBool::new(false),
            taken: AtomicUsize::new(0),
            total: tasks.len(),
            recheck,
        });
        let workers: Vec<_> = (0..2)
            .map(|worker| {
                let model = model.clone();
                thread::spawn(move || model.worker(worker))
            })
            .collect();
        tasks.iter().for_each(|&task| model.push(task));
        workers
            .into_iter()
            .for_each(|worker| worker.join().unwrap());
        assert_eq!(model.taken.load(Ordering::SeqCst), tasks.len());
        assert!(model.queue.lock().unwrap().is_empty());
    }

    #[test]
    fn no_lost_wake_up_for_unpinned_tasks() {
        explore(1, || workers_and_pusher(&[None, None, None], true));
    }

    #[test]
    fn no_lost_wake_up_for_pinned_tasks() {
        explore(2, || {
            workers_and_pusher(&[Some(1), None, Some(0), Some(1)], true)
        });
    }

    /// The check has teeth: without the re-check after registering, a push between a
    /// worker's look and its registration is lost, and shuttle finds that schedule.
    #[test]
    #[should_panic(expected = "deadlock")]
    fn sleeping_without_the_recheck_loses_a_wake_up() {
        explore(3, || workers_and_pusher(&[Some(1), None, Some(0)], false));
    }
}
