//! Sleeping and waking idle workers in lock mode: a worker sleeps only after it found
//! nothing to run anywhere, and each new task wakes at most one sleeper (the one
//! that may run it, for a pinned task). Pushers read a counter, so while no worker
//! sleeps a push costs one fence and one load, and no system call.
//!
//! # Invariants
//! - `sleeping` equals `state.sleepers.len()`; both change only under `state`.
//! - A worker is in `sleepers` from `prepare` until a waker removes it (`wake_one`,
//!   `wake`, `wake_all`) or it withdraws (`cancel`); `sleep` returns once it is out.
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
        let mut state = self.lock();
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
