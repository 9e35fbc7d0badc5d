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
