//! Waits for input on `io.popen` pipes without a thread per wait: one poller thread
//! per runtime (Linux `epoll`) wakes the processes whose pipes have something to
//! read, as Go's network poller parks goroutines on descriptors instead of blocking
//! threads in `read`.
//!
//! A process whose pipe read would wait registers the pipe's descriptor here with its
//! waker ([`Readiness::watch`]), parks, and reads once woken; its worker runs other
//! processes meanwhile, and no spare thread is taken (a blocked `read` would need one,
//! `process/blocked.rs`). The poller thread starts at the first watch and stops when
//! the runtime goes away.
//!
//! # Invariants
//! - A watch is one `EPOLLONESHOT` registration of its descriptor, keyed by a token
//!   never reused: it is removed from the epoll set exactly once, by whichever of the
//!   poller (its event fired) or the waiter ([`Readiness::unwatch`]) takes it out of
//!   `watches` first, under that lock, while the waiter still holds the descriptor
//!   open (it is parked in the read of it, or unwatching).
//! - Each watch not yet taken out counts once in the runtime's [`Liveness`]: added
//!   before the descriptor is registered (so before the waiter parks), removed after
//!   the waker was called (the poller) or once the waiter took it out itself: the
//!   deadlock detector never reports a process that a pipe may still wake.
//! - An already readable descriptor (input, its end, an error) fires as soon as it is
//!   registered (epoll is level-triggered): a watch cannot miss input that came
//!   before it.
//! - A poller thread that cannot wait any more (`epoll_wait` failed) wakes every
//!   waiter and refuses every later watch: the reads then go ahead without it, and
//!   no process stays parked on a watch that nothing would fire.

use crate::liveness::Liveness;
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::Waker;

/// The token of the poller's own stop signal (an eventfd); watches count from 1.
const STOP: u64 = 0;

/// Events the poller thread takes at once.
const BATCH: usize = 64;

/// A runtime's pipe poller (see the module header). Cheap until its first watch.
pub(crate) struct Readiness {
    liveness: Arc<Liveness>,
    /// Made at the first watch: `None` if the kernel refused an epoll set, an eventfd
    /// or the thread (watches then fail, and the reads block as other C calls do).
    poller: OnceLock<Option<Arc<Poller>>>,
}

struct Poller {
    epoll: OwnedFd,
    stop: OwnedFd,
    watches: Mutex<Watches>,
    liveness: Arc<Liveness>,
}

#[derive(Default)]
struct Watches {
    next: u64,
    /// Token → the watched descriptor and the waker of its waiter.
    waiting: HashMap<u64, (RawFd, Waker)>,
    /// The poller thread has stopped on an error: no watch is taken any more.
    stopped: bool,
}

impl Readiness {
    /// A poller whose pending watches count in `liveness`; no thread yet.
    pub(crate) fn new(liveness: Arc<Liveness>) -> Self {
        Self {
            liveness,
            poller: OnceLock::new(),
        }
    }

    /// Wakes `waker` once `fd` (a pipe's read end, open until the watch is over) has
    /// input, its end or an error. Returns the watch's token for [`Self::unwatch`], or
    /// the error that kept the descriptor from being watched (the caller then reads
    /// without waiting here).
    pub(crate) fn watch(&self, fd: RawFd, waker: Waker) -> io::Result<u64> {
        let Some(poller) = self.poller.get_or_init(|| Poller::start(&self.liveness)) else {
            return Err(io::Error::other("the pipe poller could not start"));
        };
        let mut watches = poller.lock();
        if watches.stopped {
            return Err(io::Error::other("the pipe poller has stopped"));
        }
        watches.next += 1;
        let token = watches.next;
        self.liveness.add();
        let mut event = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLONESHOT) as u32,
            u64: token,
        };
        // SAFETY: `epoll` is this poller's open epoll set; `event` is a valid event.
        if unsafe {
            libc::epoll_ctl(
                poller.epoll.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                fd,
                &mut event,
            )
        } != 0
        {
            let error = io::Error::last_os_error();
            self.liveness.remove();
            return Err(error);
        }
        watches.waiting.insert(token, (fd, waker));
        Ok(token)
    }

    /// Ends the watch `token` if its event has not fired (nothing happens if it has):
    /// called by the waiter once it runs again, whatever woke it.
    pub(crate) fn unwatch(&self, token: u64) {
        let Some(Some(poller)) = self.poller.get() else {
            return;
        };
        let mut watches = poller.lock();
        if let Some((fd, _)) = watches.waiting.remove(&token) {
            poller.forget(fd);
            drop(watches);
            self.liveness.remove();
        }
    }
}

impl Drop for Readiness {
    fn drop(&mut self) {
        if let Some(Some(poller)) = self.poller.get() {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from `one` to the poller's eventfd, which the
            // poller thread reads as its signal to stop.
            unsafe { libc::write(poller.stop.as_raw_fd(), (&raw const one).cast(), 8) };
        }
    }
}

impl Poller {
    /// An epoll set with the stop eventfd in it, and its thread; `None` if the kernel
    /// refuses any of them.
    fn start(liveness: &Arc<Liveness>) -> Option<Arc<Self>> {
        // SAFETY: plain system calls; each descriptor they return is owned at once.
        let (epoll, stop) = unsafe {
            let epoll = libc::epoll_create1(libc::EPOLL_CLOEXEC);
            if epoll < 0 {
                return None;
            }
            let epoll = OwnedFd::from_raw_fd(epoll);
            let stop = libc::eventfd(0, libc::EFD_CLOEXEC);
            if stop < 0 {
                return None;
            }
            (epoll, OwnedFd::from_raw_fd(stop))
        };
        let mut event = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: STOP,
        };
        // SAFETY: both descriptors are open and owned here; `event` is valid.
        let added = unsafe {
            libc::epoll_ctl(
                epoll.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                stop.as_raw_fd(),
                &mut event,
            )
        };
        if added != 0 {
            return None;
        }
        let poller = Arc::new(Poller {
            epoll,
            stop,
            watches: Mutex::new(Watches::default()),
            liveness: liveness.clone(),
        });
        let running = poller.clone();
        std::thread::Builder::new()
            .name("lutra-poll".into())
            .spawn(move || running.run())
            .ok()?;
        Some(poller)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Watches> {
        self.watches.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes `fd` out of the epoll set (with the lock of `watches` held, see the
    /// module invariants).
    fn forget(&self, fd: RawFd) {
        // SAFETY: `fd` is still open (module invariants); a failure leaves nothing to
        // undo (the one-shot registration is then already gone with its descriptor).
        unsafe {
            libc::epoll_ctl(
                self.epoll.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                fd,
                std::ptr::null_mut(),
            )
        };
    }

    /// Refuses further watches and wakes every waiter (each then reads without the
    /// poller): the poller thread cannot wait any more.
    fn stop_on_error(&self) {
        let wakers: Vec<Waker> = {
            let mut watches = self.lock();
            watches.stopped = true;
            let waiting: Vec<_> = watches.waiting.drain().map(|(_, watch)| watch).collect();
            waiting
                .into_iter()
                .map(|(fd, waker)| {
                    self.forget(fd);
                    waker
                })
                .collect()
        };
        for waker in wakers {
            waker.wake();
            self.liveness.remove();
        }
    }

    /// The poller thread: wakes the waiter of each fired watch until told to stop.
    fn run(&self) {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; BATCH];
        loop {
            // SAFETY: `events` has room for BATCH events; the epoll set is open for
            // as long as `self` lives.
            let count = unsafe {
                libc::epoll_wait(
                    self.epoll.as_raw_fd(),
                    events.as_mut_ptr(),
                    BATCH as i32,
                    -1,
                )
            };
            let Ok(count) = usize::try_from(count) else {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                self.stop_on_error();
                return;
            };
            for event in &events[..count] {
                let token = event.u64;
                if token == STOP {
                    return;
                }
                let fired = {
                    let mut watches = self.lock();
                    let fired = watches.waiting.remove(&token);
                    if let Some((fd, _)) = &fired {
                        self.forget(*fd);
                    }
                    fired
                };
                if let Some((_, waker)) = fired {
                    waker.wake();
                    self.liveness.remove();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::task::Wake;

    struct Signal(Mutex<mpsc::Sender<()>>);

    impl Wake for Signal {
        fn wake(self: Arc<Self>) {
            let _ = self.0.lock().unwrap().send(());
        }
    }

    fn pipe() -> (OwnedFd, OwnedFd) {
        let mut ends = [0; 2];
        // SAFETY: `ends` has room for the two descriptors, owned at once.
        unsafe {
            assert_eq!(libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC), 0);
            (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1]))
        }
    }

    fn write_byte(write: &OwnedFd) {
        // SAFETY: writes one byte from a live buffer to the pipe's open write end.
        let written = unsafe { libc::write(write.as_raw_fd(), b"x".as_ptr().cast(), 1) };
        assert_eq!(written, 1);
    }

    fn signal() -> (Waker, mpsc::Receiver<()>) {
        let (send, receive) = mpsc::channel();
        (Waker::from(Arc::new(Signal(Mutex::new(send)))), receive)
    }

    #[test]
    fn a_watch_fires_once_input_comes_and_counts_until_then() {
        let liveness = Arc::new(Liveness::default());
        let readiness = Readiness::new(liveness.clone());
        let (read, write) = pipe();
        let (waker, woken) = signal();
        let token = readiness.watch(read.as_raw_fd(), waker).unwrap();
        assert!(!liveness.nothing_awake(), "a pending watch counts");
        assert!(woken.try_recv().is_err(), "nothing to read yet");
        write_byte(&write);
        woken.recv().unwrap();
        // The poller removes the watch's share right after the wake-up.
        while !liveness.nothing_awake() {
            std::thread::yield_now();
        }
        readiness.unwatch(token);
        assert!(liveness.nothing_awake(), "a fired watch is not ended twice");
    }

    #[test]
    fn input_before_the_watch_and_the_pipes_end_both_fire() {
        let liveness = Arc::new(Liveness::default());
        let readiness = Readiness::new(liveness.clone());
        let (read, write) = pipe();
        write_byte(&write);
        let (waker, woken) = signal();
        readiness.watch(read.as_raw_fd(), waker).unwrap();
        woken.recv().unwrap();
        let (other_read, other_write) = pipe();
        drop(other_write);
        let (waker, woken) = signal();
        readiness.watch(other_read.as_raw_fd(), waker).unwrap();
        woken.recv().unwrap();
    }

    #[test]
    fn a_poller_that_stops_wakes_its_waiters_and_refuses_new_watches() {
        let liveness = Arc::new(Liveness::default());
        let readiness = Readiness::new(liveness.clone());
        let (read, _write) = pipe();
        let (waker, woken) = signal();
        let token = readiness.watch(read.as_raw_fd(), waker).unwrap();
        let poller = readiness.poller.get().unwrap().as_ref().unwrap();
        poller.stop_on_error();
        woken.recv().unwrap();
        assert!(
            liveness.nothing_awake(),
            "the stopped watch no longer counts"
        );
        readiness.unwatch(token);
        let (waker, _) = signal();
        assert!(readiness.watch(read.as_raw_fd(), waker).is_err());
        assert!(liveness.nothing_awake(), "a refused watch never counts");
    }

    #[test]
    fn an_unwatched_pipe_wakes_nobody_and_counts_no_more() {
        let liveness = Arc::new(Liveness::default());
        let readiness = Readiness::new(liveness.clone());
        let (read, write) = pipe();
        let (waker, woken) = signal();
        let token = readiness.watch(read.as_raw_fd(), waker).unwrap();
        readiness.unwatch(token);
        assert!(liveness.nothing_awake());
        // The same descriptor watched again (a second wait of the same read): the
        // first registration is gone, so this one is accepted.
        let (waker, again) = signal();
        readiness.watch(read.as_raw_fd(), waker).unwrap();
        write_byte(&write);
        again.recv().unwrap();
        assert!(woken.try_recv().is_err(), "the ended watch stayed silent");
    }
}
