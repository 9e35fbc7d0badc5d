//! How a transaction that must wait gets out of the way: the parking interface a
//! scheduler implements. The default, [`ThreadParking`], parks the OS thread.
//!
//! # Protocol (no lost wake-up)
//! 1. The waiter takes [`Parking::waker`] and publishes it where the waking side will
//!    find it.
//! 2. The waiter re-checks its condition, then calls [`Parking::park`] in a loop until
//!    the condition holds: `park` may return early, and a wake that comes before
//!    `park` makes the next `park` return at once.

use crate::global::sync::thread;
use std::sync::Arc;
use std::task::{Wake, Waker};

/// Blocks and resumes the current task.
pub trait Parking: Send + Sync {
    /// A waker that makes the current task runnable again.
    fn waker(&self) -> Waker;
    /// Suspends the current task until its waker is woken. May return spuriously.
    fn park(&self);
    /// Lets other tasks run for a moment.
    fn yield_now(&self);
    /// Runs another task instead of the current one if there is one, preferably one
    /// whose next transaction differs (LUTS's `luts_switch`); the default yields.
    fn switch_away(&self) {
        self.yield_now();
    }
}

/// Parks the OS thread: [`std::thread::park`] and `unpark`.
#[derive(Debug, Default)]
pub struct ThreadParking;

struct ThreadWaker(thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

impl Parking for ThreadParking {
    fn waker(&self) -> Waker {
        Waker::from(Arc::new(ThreadWaker(thread::current())))
    }

    fn park(&self) {
        thread::park();
    }

    fn yield_now(&self) {
        thread::yield_now();
    }
}
