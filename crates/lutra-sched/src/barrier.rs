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

use crate::park::{current_waker, park};
use std::sync::Mutex;
use std::task::Waker;

struct State {
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
    parties: usize,
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
            parties,
            state: Mutex::new(State {
                remaining: parties,
                sense: false,
                waiters: Vec::new(),
            }),
        }
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
            state.remaining = self.parties;
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
