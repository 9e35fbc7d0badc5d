//! Helpers shared by lutra-sched's integration tests.

use std::sync::mpsc;
use std::time::Duration;

/// Runs `body` on its own thread and fails if it takes longer than `limit`: a hang
/// (a lost task or wake-up, a stall) becomes a failure naming `what`. A panic in
/// `body` is passed on.
pub(crate) fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done, finished) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let value = body();
        let _ = done.send(());
        value
    });
    match finished.recv_timeout(limit) {
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Ok(value) => value,
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what} did not finish in {limit:?}"),
    }
}

/// The calling thread's kernel thread id, for [`asleep`].
#[allow(dead_code)]
pub(crate) fn current_tid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Whether the kernel reports thread `tid` of this process asleep (state `S`): blocked
/// on a condition variable, a futex or in `park`, not running or runnable. A handshake
/// polls it to know that another thread provably waits.
#[allow(dead_code)]
pub(crate) fn asleep(tid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) else {
        return false;
    };
    let after_name = stat.rfind(')').map_or("", |end| &stat[end + 1..]);
    after_name.trim_start().starts_with('S')
}

/// Yields until every thread of `tids` is [`asleep`] at once (the caller bounds the
/// wait with [`within`]).
#[allow(dead_code)]
pub(crate) fn wait_until_asleep(tids: &[i32]) {
    while !tids.iter().all(|&tid| asleep(tid)) {
        std::thread::yield_now();
    }
}

/// Whether thread `tid` of this process is blocked in a futex wait with no timeout
/// (`/proc/self/task/TID/syscall`: system call 202, `futex`, whose fourth argument,
/// the timeout, is null): it sleeps until somebody wakes it, and would not wake on a
/// timer to look again.
#[allow(dead_code)]
pub(crate) fn waits_without_timeout(tid: i32) -> bool {
    let Ok(syscall) = std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")) else {
        return false;
    };
    let fields: Vec<&str> = syscall.split_whitespace().collect();
    fields.first() == Some(&"202") && fields.get(4) == Some(&"0x0")
}
