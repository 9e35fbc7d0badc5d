//! Timeouts: one thread that wakes waiters at their deadlines.
//!
//! # Invariants
//! - Every registered waker is woken once, at or after its deadline (possibly after
//!   its waiter stopped caring: waiters re-check their own deadline).
//! - `pending()` counts registrations not yet fired, so that the deadlock detector
//!   never reports processes that a timer will wake.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::task::Waker;
use std::time::{Duration, Instant};

/// Seconds since the first use of the clock (the scale of Lua-side deadlines).
pub(crate) fn now() -> f64 {
    epoch().elapsed().as_secs_f64()
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// The timer thread's queue.
#[derive(Default)]
pub(crate) struct Timer {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: Mutex<Vec<(f64, Waker)>>,
    changed: Condvar,
    pending: AtomicUsize,
    started: OnceLock<()>,
}

impl Timer {
    /// Wakes `waker` once `now() >= deadline`.
    pub(crate) fn wake_at(&self, deadline: f64, waker: Waker) {
        self.inner.started.get_or_init(|| {
            let inner = self.inner.clone();
            std::thread::Builder::new()
                .name("lutra-timer".into())
                .spawn(move || inner.run())
                .expect("the OS refused to start the timer thread");
        });
        let mut entries = self.inner.lock();
        self.inner.pending.fetch_add(1, Ordering::SeqCst);
        entries.push((deadline, waker));
        self.inner.changed.notify_one();
    }

    /// Registrations not yet fired.
    pub(crate) fn pending(&self) -> usize {
        self.inner.pending.load(Ordering::SeqCst)
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(f64, Waker)>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn run(&self) {
        let mut entries = self.lock();
        loop {
            let now = now();
            let (due, later): (Vec<_>, Vec<_>) = entries
                .drain(..)
                .partition(|(deadline, _)| *deadline <= now);
            *entries = later;
            if !due.is_empty() {
                drop(entries);
                for (_, waker) in due {
                    waker.wake();
                    self.pending.fetch_sub(1, Ordering::SeqCst);
                }
                entries = self.lock();
                continue;
            }
            let next = entries
                .iter()
                .map(|(deadline, _)| *deadline)
                .fold(f64::INFINITY, f64::min);
            let wait = if next.is_finite() {
                Duration::from_secs_f64((next - now).max(0.0))
            } else {
                Duration::from_secs(3600)
            };
            entries = self
                .changed
                .wait_timeout(entries, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}
