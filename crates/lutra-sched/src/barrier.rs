//! A sense-reversing barrier whose waiters park (the worker runs other tasks), as
//! LUTS's `luts_barrier_wait`.
//!
//! # Protocol
//! 1. A waiter reads the current sense `s` and decrements the count.
//! 2. The last arrival resets the count, flips the sense to `!s` and wakes everyone
//!    registered.
//! 3. The others register their waker, then park until the sense differs from `s`
//!    (registration happens under the lock the last arrival takes to wake, so no wake
//!    is lost).
//! 4. `set_parties` resizes the barrier only between rounds (`remaining == parties`,
//!    under the same lock), so a round never mixes two sizes.

use crate::suspend::{current_waker, park};
use std::sync::Mutex;
use std::task::Waker;

struct State {
    parties: usize,
    remaining: usize,
    sense: bool,
    waiters: Vec<Waker>,
}

/// A reusable barrier for `parties` tasks (or threads).
///
/// ```
/// use lutra_sched::{Barrier, Runtime};
/// use std::sync::Arc;
/// let runtime = Runtime::builder().workers(2).build();
/// let barrier = Arc::new(Barrier::new(8));
/// let tasks: Vec<_> = (0..8)
///     .map(|_| { let barrier = barrier.clone(); runtime.spawn(move || barrier.wait()) })
///     .collect();
/// let leaders = tasks.into_iter().map(|task| task.join().unwrap()).filter(|&leader| leader).count();
/// assert_eq!(leaders, 1);
/// ```
pub struct Barrier {
    state: Mutex<State>,
}

impl Barrier {
    /// A barrier that opens when `parties` callers wait on it.
    ///
    /// # Panics
    /// If `parties` is 0.
    pub fn new(parties: usize) -> Self {
        assert!(parties > 0, "a barrier needs at least one party");
        Self {
            state: Mutex::new(State {
                parties,
                remaining: parties,
                sense: false,
                waiters: Vec::new(),
            }),
        }
    }

    /// The number of callers that open a round.
    pub fn parties(&self) -> usize {
        self.lock().parties
    }

    /// How many callers wait in the current round (arrived, round not complete).
    pub fn waiting(&self) -> usize {
        let state = self.lock();
        state.parties - state.remaining
    }

    /// Makes rounds open with `parties` callers from now on. Only between rounds: if
    /// callers already wait in the current round, changes nothing and returns their
    /// number.
    ///
    /// # Panics
    /// If `parties` is 0.
    pub fn set_parties(&self, parties: usize) -> Result<(), usize> {
        assert!(parties > 0, "a barrier needs at least one party");
        let mut state = self.lock();
        let waiting = state.parties - state.remaining;
        if waiting > 0 {
            return Err(waiting);
        }
        state.parties = parties;
        state.remaining = parties;
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Waits until `parties` callers have called `wait` in this round. Returns `true`
    /// for exactly one caller per round (the last to arrive).
    pub fn wait(&self) -> bool {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let sense = state.sense;
        state.remaining -= 1;
        if state.remaining == 0 {
            state.remaining = state.parties;
            state.sense = !sense;
            let waiters = std::mem::take(&mut state.waiters);
            drop(state);
            waiters.into_iter().for_each(Waker::wake);
            return true;
        }
        state.waiters.push(current_waker());
        drop(state);
        loop {
            park();
            let state = self
                .state
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if state.sense != sense {
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn resizes_only_between_rounds() {
        let barrier = Arc::new(Barrier::new(2));
        assert_eq!(barrier.set_parties(3), Ok(()));
        assert_eq!(barrier.parties(), 3);
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let barrier = barrier.clone();
                std::thread::spawn(move || barrier.wait())
            })
            .collect();
        while barrier.lock().remaining > 1 {
            std::thread::yield_now();
        }
        assert_eq!(barrier.set_parties(1), Err(2));
        assert!(barrier.wait(), "the third caller opens the round");
        let leaders = waiters
            .into_iter()
            .map(|waiter| waiter.join().expect("waiter"))
            .filter(|&leader| leader)
            .count();
        assert_eq!(leaders, 0);
        assert_eq!(barrier.set_parties(1), Ok(()));
        assert!(barrier.wait());
    }
}
