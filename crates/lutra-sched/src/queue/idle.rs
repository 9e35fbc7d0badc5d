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
//! In `locked.rs` the fences are stronger than needed: the push and the re-check also
//! take the same queue's mutex, which orders them (the loom check in `model` passes
//! with the fences removed and every access of `sleeping` relaxed). They keep this
//! protocol correct on its own, for a queue that is not under a mutex.
//!
//! Stopping: the stop condition is stored (SeqCst) before `wake_all`, which takes
//! `state`. A worker registered before that is woken by it; one that registers after
//! sees the condition in step 2.

use crate::sync::{AtomicUsize, Condvar, Mutex, MutexGuard, Ordering, fence};
use std::sync::Arc;
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
        // ORDERING: under `state`, with the fence below: the fence, not this RMW's
        // ordering, orders the increment before the re-check (module header).
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
            // ORDERING: under `state`: a pusher that reads the count still above zero takes
            // `state` and finds `worker` gone; one that reads it at zero after this had
            // nobody to wake (this worker is awake).
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
        // ORDERING: a test's look at the count; SeqCst as every access of `sleeping`.
        self.sleeping.load(Ordering::SeqCst)
    }

    /// Pusher step 2, first half: whether any worker may be asleep.
    fn waker_needed(&self) -> bool {
        // ORDERING: pairs with the fence in `prepare`: the caller's push comes before
        // this load.
        fence(Ordering::SeqCst);
        // ORDERING: after the fence above: the load half of the pusher's store-then-load
        // pair (module header).
        self.sleeping.load(Ordering::SeqCst) > 0
    }

    /// Pusher step 2 for a task any worker may run: wakes one sleeper, if any.
    pub(crate) fn wake_one(&self) {
        if !self.waker_needed() {
            return;
        }
        let mut state = self.lock();
        if let Some(worker) = state.sleepers.pop() {
            // ORDERING: under `state`, with the sleeper's removal: the lock orders it
            // against `prepare` and the other wakers.
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
            // ORDERING: under `state`, with the sleeper's removal: the lock orders it
            // against `prepare` and the other wakers.
            self.sleeping.fetch_sub(1, Ordering::SeqCst);
            state.parker(worker).notify_one();
        }
    }

    /// Wakes every sleeper (stopping: see the module's protocol).
    pub(crate) fn wake_all(&self) {
        let mut state = self.lock();
        let woken = std::mem::take(&mut state.sleepers);
        // ORDERING: under `state`, with the sleepers' removal: the lock orders it against
        // `prepare` and the other wakers.
        self.sleeping.fetch_sub(woken.len(), Ordering::SeqCst);
        for worker in woken {
            state.parker(worker).notify_one();
        }
    }
}

/// Model checks of the protocol on shuttle's scheduler, through its one client: the
/// real lock-mode run queue (`locked.rs`), whose queues, `sleepers` lock, condition
/// variables and `sleeping` counter are all shuttle's (`sync.rs`), so every lock,
/// wait and atomic access is a scheduling point. Two workers loop on `next` (look,
/// `prepare`, check stop, look again, `sleep`) as the run loop does; the main thread
/// pushes tasks (some pinned) from outside the workers, as a host or a timer does;
/// the worker that takes the last task stores the stop condition and calls
/// `wake_all`, as a shutdown does. A lost wake-up leaves a task queued and every
/// worker asleep: shuttle reports the deadlock and the check fails.
///
/// The step these checks guard: the worker's re-check of the queues after `prepare`
/// registered it (`locked.rs`, `next`: protocol step 2). Checked once by deleting that
/// re-check (`next` going from `prepare` and the stop check straight to `sleep`):
/// both checks then fail with shuttle's deadlock report, a push having landed between
/// a worker's first look and its registration. The fences' orderings are not what
/// shuttle explores (its atomics are sequentially consistent).
#[cfg(all(test, any(feature = "shuttle", feature = "loom")))]
mod model {
    use crate::queue::locked::LockedQueue;
    use crate::queue::{Private, TaskQueue};
    use crate::sync::{AtomicBool, AtomicUsize, Ordering, thread};
    use crate::task::TaskCore;
    use std::sync::Arc;

    /// Schedules explored per scheduler and check.
    #[cfg(all(feature = "shuttle", not(feature = "loom")))]
    const ITERATIONS: usize = 2000;

    /// `workers` workers running `next` until stopped, and pushes of `tasks` (each
    /// `None` for any worker, or `Some(w)` pinned to worker `w`) from the main thread.
    fn workers_and_pusher(workers: usize, tasks: &'static [Option<usize>]) {
        let queue = Arc::new(LockedQueue::new());
        let stop = Arc::new(AtomicBool::new(false));
        let taken = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..workers)
            .map(|worker| {
                let (queue, stop, taken) = (queue.clone(), stop.clone(), taken.clone());
                thread::spawn(move || {
                    let mut private = Private::new();
                    // ORDERING: the stop condition, read after `prepare` as a worker's is:
                    // pairs with the SeqCst store below, made before `wake_all` (module
                    // header, "Stopping").
                    let stopped = || stop.load(Ordering::SeqCst);
                    while let Some(task) = queue.next(worker, &mut private, false, &stopped) {
                        assert!(
                            task.home.is_none_or(|home| home == worker),
                            "a pinned task moved"
                        );
                        // ORDERING: an RMW: the last taker is the one that sees the total
                        // (any ordering would do; SeqCst as the simplest).
                        if taken.fetch_add(1, Ordering::SeqCst) + 1 == tasks.len() {
                            // ORDERING: the stop condition before `wake_all`, as a shutdown
                            // stores it (module header, "Stopping").
                            stop.store(true, Ordering::SeqCst);
                            queue.wake_all();
                        }
                    }
                })
            })
            .collect();
        for (id, &home) in tasks.iter().enumerate() {
            queue.push(Arc::new(TaskCore::new(id as u64, home, None)), None);
        }
        workers
            .into_iter()
            .for_each(|worker| worker.join().unwrap());
        // ORDERING: after joining every worker (the join orders it): any ordering would do.
        assert_eq!(taken.load(Ordering::SeqCst), tasks.len());
    }

    #[cfg(all(feature = "shuttle", not(feature = "loom")))]
    #[test]
    fn no_lost_wake_up_for_unpinned_tasks() {
        crate::queue::explore::explore(1, ITERATIONS, || workers_and_pusher(2, &[None, None]));
    }

    #[cfg(all(feature = "shuttle", not(feature = "loom")))]
    #[test]
    fn no_lost_wake_up_for_pinned_tasks() {
        crate::queue::explore::explore(2, ITERATIONS, || {
            workers_and_pusher(2, &[Some(1), None, Some(0)])
        });
    }

    /// One worker and one push under loom, which also lets each load return any
    /// store the memory model allows for its `Ordering` (at up to 3 preemptions).
    /// Guards the same step: the worker's re-check after `prepare`. Checked once by
    /// deleting it, as above: loom reports the deadlock.
    #[cfg(feature = "loom")]
    #[test]
    fn no_lost_wake_up_under_weak_memory() {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(3);
        builder.check(|| workers_and_pusher(1, &[None]));
    }
}
