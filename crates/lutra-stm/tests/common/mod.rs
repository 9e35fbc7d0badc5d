//! Helpers shared by the integration tests: engine configurations to sweep, a
//! watchdog that turns a hang into a failure, and per-thread CPU time.

#![allow(dead_code)]

use lutra_stm::{Config, DesignKind, Parking, Stm, cm};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::task::{Wake, Waker};
use std::time::Duration;

/// An engine with `design` and the contention manager named `manager`.
pub(crate) fn engine(design: DesignKind, manager: &str) -> Stm {
    Stm::new(config(design, manager))
}

/// The configuration of [`engine`], for further `with_*` calls.
pub(crate) fn config(design: DesignKind, manager: &str) -> Config {
    Config::default()
        .with_design(design)
        .with_shared_manager(cm::by_name(manager).expect("a manager from cm::NAMES"))
}

/// Every design with every contention manager.
pub(crate) fn all_configs() -> impl Iterator<Item = (DesignKind, &'static str)> {
    DesignKind::ALL
        .into_iter()
        .flat_map(|design| cm::NAMES.into_iter().map(move |manager| (design, manager)))
}

/// Runs `body` on its own thread and fails if it has not finished within `limit`
/// (a deadlock, a lost wake-up or a livelock would otherwise hang the suite). A panic
/// in `body` is propagated with its message.
pub(crate) fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done, finished) = mpsc::channel();
    let worker = std::thread::Builder::new()
        .name(what.to_string())
        .spawn(move || {
            let value = body();
            let _ = done.send(());
            value
        })
        .expect("spawn the watched thread");
    match finished.recv_timeout(limit) {
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Ok(value) => value,
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: still running after {limit:?} (deadlock, lost wake-up or livelock)")
        }
    }
}

/// CPU time the calling thread has used so far.
pub(crate) fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; the clock id is a constant the
    // kernel knows.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// The message of a caught panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "<non-string panic payload>".to_string()
    }
}

/// A [`Parking`] that parks the OS thread as [`lutra_stm::ThreadParking`] does and
/// counts what the engine asked of it: a test waits on these counts (a handshake) to
/// know that a thread is provably parked or waiting inside the engine, instead of
/// sleeping and hoping.
#[derive(Default)]
pub(crate) struct CountingParking {
    /// Calls of `park` (counted just before the thread parks).
    pub(crate) parks: AtomicUsize,
    /// Calls of `yield_now` and `switch_away` (the engine's wait loops).
    pub(crate) yields: AtomicUsize,
    /// Wake-ups delivered through a waker this parking handed out.
    pub(crate) wakes: Arc<AtomicUsize>,
}

struct CountingWaker {
    thread: std::thread::Thread,
    wakes: Arc<AtomicUsize>,
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        self.thread.unpark();
    }
}

impl Parking for CountingParking {
    fn waker(&self) -> Waker {
        Waker::from(Arc::new(CountingWaker {
            thread: std::thread::current(),
            wakes: self.wakes.clone(),
        }))
    }

    fn park(&self) {
        self.parks.fetch_add(1, Ordering::SeqCst);
        std::thread::park();
    }

    fn yield_now(&self) {
        self.yields.fetch_add(1, Ordering::SeqCst);
        std::thread::yield_now();
    }
}

impl CountingParking {
    /// Calls of `park` so far.
    pub(crate) fn parks(&self) -> usize {
        self.parks.load(Ordering::SeqCst)
    }

    /// Calls of `yield_now` so far.
    pub(crate) fn yields(&self) -> usize {
        self.yields.load(Ordering::SeqCst)
    }

    /// Wake-ups delivered so far.
    pub(crate) fn wakes(&self) -> usize {
        self.wakes.load(Ordering::SeqCst)
    }
}

/// Yields until `done` holds (a handshake: the caller bounds the wait with [`within`]).
pub(crate) fn wait_for(mut done: impl FnMut() -> bool) {
    while !done() {
        std::thread::yield_now();
    }
}
