//! Timeouts: one thread that wakes waiters at their deadlines.
//!
//! # Invariants
//! - Every registered waker is woken once, at or after its deadline (possibly after
//!   its waiter stopped caring: waiters re-check their own deadline).
//! - Each registration not yet fired counts once in the runtime's [`Liveness`]: added
//!   before the waiter can park, removed only after its waker was called, so the
//!   deadlock detector never reports processes that a timer will wake.
//! - The timer thread never panics on a deadline: a deadline more than [`NEVER`] ahead
//!   (1e300 seconds, infinite, NaN) is never registered (nothing would fire it in the
//!   life of the machine; the waiter waits for its other wake-ups, and the deadlock
//!   detector treats it as waiting forever), and any other is waited for in slices of
//!   at most [`LONGEST_WAIT`].

use crate::liveness::Liveness;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::task::Waker;
use std::time::{Duration, Instant};

/// The longest the timer thread sleeps at once (it then looks at its queue again).
const LONGEST_WAIT: Duration = Duration::from_secs(3600);

/// A timeout this long (about 31,700 years) or longer is forever.
pub(crate) const NEVER: f64 = 1e12;

/// Seconds since the first use of the clock (the scale of Lua-side deadlines).
pub(crate) fn now() -> f64 {
    epoch().elapsed().as_secs_f64()
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// How long to sleep until `deadline`, seen at `now`: never more than
/// [`LONGEST_WAIT`], whatever the deadline (a saturating conversion).
fn wait_until(deadline: f64, now: f64) -> Duration {
    Duration::try_from_secs_f64((deadline - now).max(0.0))
        .unwrap_or(LONGEST_WAIT)
        .min(LONGEST_WAIT)
}

/// The timer thread's queue.
pub(crate) struct Timer {
    inner: Arc<Inner>,
}

struct Inner {
    entries: Mutex<Vec<(f64, Waker)>>,
    changed: Condvar,
    liveness: Arc<Liveness>,
    started: OnceLock<()>,
}

impl Timer {
    /// A timer whose pending registrations count in `liveness`.
    pub(crate) fn new(liveness: Arc<Liveness>) -> Self {
        Self {
            inner: Arc::new(Inner {
                entries: Mutex::new(Vec::new()),
                changed: Condvar::new(),
                liveness,
                started: OnceLock::new(),
            }),
        }
    }

    /// Wakes `waker` once `now() >= deadline`; never, for a deadline [`NEVER`] or
    /// more ahead (see the module's invariants).
    pub(crate) fn wake_at(&self, deadline: f64, waker: Waker) {
        let ahead = deadline - now();
        if ahead.is_nan() || ahead >= NEVER {
            return;
        }
        self.inner.started.get_or_init(|| {
            let inner = self.inner.clone();
            std::thread::Builder::new()
                .name("lutra-timer".into())
                .spawn(move || inner.run())
                .expect("the OS refused to start the timer thread");
        });
        let mut entries = self.inner.lock();
        self.inner.liveness.add();
        entries.push((deadline, waker));
        self.inner.changed.notify_one();
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
                    self.liveness.remove();
                }
                entries = self.lock();
                continue;
            }
            let wait = entries
                .iter()
                .map(|(deadline, _)| wait_until(*deadline, now))
                .min()
                .unwrap_or(LONGEST_WAIT);
            entries = self
                .changed
                .wait_timeout(entries, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::task::Wake;

    struct Flag(AtomicBool);

    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            // ORDERING: the timer thread's wake-up: pairs with the test's load of the flag.
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn far_deadlines_saturate() {
        assert_eq!(wait_until(1e300, 0.0), LONGEST_WAIT);
        assert_eq!(wait_until(f64::MAX, -f64::MAX), LONGEST_WAIT);
        assert_eq!(wait_until(1.0, 2.0), Duration::ZERO);
        assert_eq!(wait_until(2.5, 2.0), Duration::from_millis(500));
    }

    /// A deadline of 1e300 seconds once killed the timer thread;
    /// the timer must go on firing nearer deadlines afterwards.
    #[test]
    fn a_huge_deadline_leaves_the_timer_working() {
        let liveness = Arc::new(Liveness::default());
        let timer = Timer::new(liveness.clone());
        let far = Arc::new(Flag(AtomicBool::new(false)));
        timer.wake_at(now() + 1e300, Waker::from(far.clone()));
        timer.wake_at(f64::INFINITY, Waker::from(far.clone()));
        timer.wake_at(f64::NAN, Waker::from(far.clone()));
        assert!(
            liveness.nothing_awake(),
            "deadlines beyond NEVER are not registered"
        );
        timer.wake_at(now() + 1e9, Waker::from(far.clone()));
        let near = Arc::new(Flag(AtomicBool::new(false)));
        timer.wake_at(now() + 0.01, Waker::from(near.clone()));
        let start = Instant::now();
        // ORDERING: pairs with the store in `Flag::wake`, on the timer thread.
        while !near.0.load(Ordering::SeqCst) {
            assert!(
                start.elapsed() < Duration::from_secs(600),
                "the timer thread stopped firing"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // ORDERING: as above: a wake-up of the far registration would be seen.
        assert!(!far.0.load(Ordering::SeqCst));
        // The 1e9 s registration still counts (it sleeps in LONGEST_WAIT slices).
        assert!(!liveness.nothing_awake());
    }
}
