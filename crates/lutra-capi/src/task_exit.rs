//! `pthread_exit` in a task of the scheduler (`sched.h`): it ends the task, as if
//! the task's function had returned, instead of unwinding the worker thread that runs
//! the task (which the C library cannot do through a task's stack: it stopped the
//! process with "FATAL: exception not rethrown").
//!
//! The library interposes `pthread_exit`: a C task runs its function under an exit
//! point (`lutra_shim_run_task` in `c/task_exit.c`), kept in the task's own
//! [`Locals`](crate::locals::Locals); a `pthread_exit` called while one is published
//! jumps back to it. Anywhere else (a plain thread, a Rust task, a worker outside
//! tasks) the call goes on to the C library's `pthread_exit` (`interpose.rs`).
//!
//! # Invariants
//! - The jump crosses only the task's C frames and [`pthread_exit`]'s own frame,
//!   which owns nothing.
//! - What the task leaves behind is what a returning task leaves: its `stm.h` state
//!   is discarded after the exit point (rolling back a transaction left open), and it
//!   counts as finished for `sched_wait`. Cleanup handlers it pushed
//!   (`pthread_cleanup_push`) do not run, and its value is discarded, as a task's
//!   return value is.

use crate::locals;
use crate::shim::SigJmpBuf;
use std::ffi::c_void;

/// The function a C task runs.
pub(crate) type TaskFn = unsafe extern "C" fn(arg: *mut c_void) -> *mut c_void;

unsafe extern "C" {
    /// Runs `function(arg)` with its exit point published in `*exit_slot`.
    fn lutra_shim_run_task(function: TaskFn, arg: *mut c_void, exit_slot: *mut *mut SigJmpBuf);
    /// Jumps to `exit_point`.
    fn lutra_shim_task_exit(exit_point: *mut SigJmpBuf) -> !;
}

/// Runs a C task's `function(arg)` under its exit point (see the module).
///
/// # Safety
/// `function` may be called once with `arg`; called from the task that runs it.
pub(crate) unsafe fn run(function: TaskFn, arg: *mut c_void) {
    match locals::with(|locals| locals.task_exit.as_ptr()) {
        // SAFETY: the task's own slot, which lives until the task finishes (after
        // this call), a word that the shim writes as a pointer (same size and
        // alignment); the caller's contract for `function`.
        Some(slot) => unsafe { lutra_shim_run_task(function, arg, slot.cast()) },
        // SAFETY: the caller's contract.
        None => unsafe {
            function(arg);
        },
    }
}

/// The exit point of the calling C task, if it runs one.
fn exit_point() -> Option<*mut SigJmpBuf> {
    lutra_sched::current_task()?;
    locals::with(|locals| locals.task_exit.get())
        .filter(|&point| point != 0)
        .map(|point| point as *mut SigJmpBuf)
}

/// POSIX's `pthread_exit`, interposed: in a C task of the scheduler, ends the task
/// (see the module); elsewhere, the C library's `pthread_exit(value)`. Does not
/// return.
///
/// # Safety
/// As the C library's: the caller's frames up to the end of the thread (or of the
/// task's function) must be C frames.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_exit(value: *mut c_void) -> ! {
    if let Some(point) = exit_point() {
        // SAFETY: the exit point of the calling task, in a frame that is live while
        // the task's function runs; only C frames and this one, which owns nothing
        // (`point` is a pointer), lie above it.
        unsafe { lutra_shim_task_exit(point) }
    }
    let next = crate::interpose::next(c"pthread_exit");
    // SAFETY: `next` is the C library's `pthread_exit`, of this very signature.
    let next: unsafe extern "C" fn(*mut c_void) -> ! = unsafe { std::mem::transmute(next) };
    // SAFETY: the caller's contract.
    unsafe { next(value) }
}
