//! Helpers shared by the integration tests: an engine whose waits are counted, so that
//! a test can wait until another thread is provably spinning or parked inside the
//! lock (a handshake) instead of sleeping and hoping.

#![allow(dead_code)]

use lutra_stm::{Config, Parking, Stm, ThreadParking};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Waker;

/// Parks as [`ThreadParking`] does and counts the calls: `park` (a thread blocks) and
/// `yield_now` (a wait loop past its pause rounds).
#[derive(Default)]
pub(crate) struct WaitCounter {
    parks: AtomicUsize,
    yields: AtomicUsize,
}

impl WaitCounter {
    /// Calls of `park` so far (counted just before the thread parks).
    pub(crate) fn parks(&self) -> usize {
        self.parks.load(Ordering::SeqCst)
    }

    /// Calls of `yield_now` so far.
    pub(crate) fn yields(&self) -> usize {
        self.yields.load(Ordering::SeqCst)
    }
}

impl Parking for WaitCounter {
    fn waker(&self) -> Waker {
        ThreadParking.waker()
    }

    fn park(&self) {
        self.parks.fetch_add(1, Ordering::SeqCst);
        ThreadParking.park();
    }

    fn yield_now(&self) {
        self.yields.fetch_add(1, Ordering::SeqCst);
        ThreadParking.yield_now();
    }
}

/// An engine whose waits go through a [`WaitCounter`], and that counter.
pub(crate) fn counted_engine() -> (Stm, Arc<WaitCounter>) {
    let counter = Arc::new(WaitCounter::default());
    let stm = Stm::new(Config::default().with_parking(counter.clone()));
    (stm, counter)
}

/// Yields until `done` holds; fails after a minute (a hang is a failure, and a
/// handshake that never completes means the feature under test is gone).
pub(crate) fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::yield_now();
    }
}
