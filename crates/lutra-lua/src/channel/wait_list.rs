//! The processes (or host threads) waiting on one object, each at most once.

use std::task::Waker;

/// Who waits: a process id (or a host thread's id) and how to wake it.
#[derive(Debug, Clone)]
pub(crate) struct Waiter {
    /// Process id; a later registration by the same id replaces the earlier one.
    pub(crate) id: u64,
    /// Wakes the waiter (a scheduler task, or a parked OS thread).
    pub(crate) waker: Waker,
}

/// Waiters of one event, keyed by id.
#[derive(Debug, Default)]
pub(crate) struct WaitList {
    waiters: Vec<Waiter>,
}

impl WaitList {
    /// Registers `waiter`, replacing an earlier registration with the same id.
    pub(crate) fn register(&mut self, waiter: Waiter) {
        match self.waiters.iter_mut().find(|w| w.id == waiter.id) {
            Some(slot) => *slot = waiter,
            None => self.waiters.push(waiter),
        }
    }

    /// Whether nobody waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.waiters.is_empty()
    }

    /// Wakes every waiter and forgets them (each re-checks its condition when it runs).
    pub(crate) fn wake_all(&mut self) {
        for waiter in self.waiters.drain(..) {
            waiter.waker.wake();
        }
    }
}
