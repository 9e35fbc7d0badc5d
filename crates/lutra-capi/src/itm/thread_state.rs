//! How the ABI's functions reach the calling thread's transaction state: the
//! fast-path slot of a registered plain thread (`fast.rs`), else the general path
//! (a task of the scheduler keeps its state in a task-local).
//!
//! # Invariants
//! - The reference handed to `body` lives for that call only, on the thread that
//!   owns the state; no jump (restart, cancel) happens while it lives.
//! - A thread that is not registered has no transaction, and a signal handler that
//!   interrupted the thread's transaction cannot reach it (`signals.rs`): both are
//!   misuse of the ABI, which stops the process with a message (libitm has no
//!   error to return).

use super::library::fatal;
use crate::fast;
use crate::thread::{ThreadTx, with_thread};

/// Runs `body` on the calling thread's registered state: the fast-path slot of a
/// plain thread, else the general path (a task's state). A thread that is not
/// registered has no transaction, and a signal handler that interrupted the
/// thread's transaction cannot reach it (`signals.rs`): misuse of the ABI, which
/// stops the process with a message.
#[inline(always)]
pub(super) fn on_thread<R>(function: &str, body: impl FnOnce(&mut ThreadTx) -> R) -> R {
    // SAFETY: entered from C; the reference ends with this call, before any jump.
    match unsafe { fast::state() } {
        Some(state) => body(state),
        None => on_thread_slow(function, body),
    }
}

#[cold]
#[inline(never)]
fn on_thread_slow<R>(function: &str, body: impl FnOnce(&mut ThreadTx) -> R) -> R {
    with_thread(|state| Ok(body(state))).unwrap_or_else(|error| {
        if crate::signals::hidden() {
            // A transaction in a signal handler that interrupted one of this thread:
            // libitm has no error to return.
            fatal(function, &error.message)
        }
        fatal(function, "called outside any transaction of this thread")
    })
}
