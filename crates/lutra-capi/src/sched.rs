//! `sched.h`: LUTS's threading and scheduling interface (seed 004) for C programs —
//! `sched_init`, `sched_start`, `sched_barrier_wait`, `sched_yield`, `sched_setid`,
//! `sched_switch`, `sched_shutdown` — on Lutra's scheduler (`lutra-sched`). A C
//! program written for threads and tinySTM becomes a many-task program by replacing
//! `pthread_create` with `sched_start` (and its joins with `sched_wait`): each task
//! is a thread for `stm.h` (`locals.rs`).
//!
//! # Semantics
//! - Workers: `sched_init(n)` starts `n` worker threads (0: one per core), each pinned
//!   to a core, never more than the cores (LUTS's system-level threads).
//! - Placement: `sched_start` pins each task to a worker chosen round robin; the task
//!   never leaves it, so C code may keep the addresses of `__thread` variables and
//!   `errno` that the compiler cached. `sched_start_migratable` lets a task move to
//!   any worker at each suspension, for code that keeps no such address.
//! - Barrier: one process-wide barrier, sized by `sched_barrier_init(parties)` (as
//!   LUTS's barrier is sized by `luts_init`'s thread count) and resizable between
//!   rounds; tasks and plain threads may wait on it; the last arrival of a round gets
//!   `SCHED_BARRIER_SERIAL` (1).
//! - Transactions: nothing that starts, waits for or suspends tasks is allowed inside
//!   a transaction (`LUTRA_EINTX`): an abort would repeat it, and a barrier or a wait
//!   inside one could wait forever for transactions it holds back. A transaction's
//!   own engine waits may still suspend its task; its state is the task's own.
//! - Ids: `sched_setid` announces the transaction a task is about to run (LUTS's
//!   `luts_setid`); `stm_start` with a non-zero `id` attribute announces it too, as
//!   LUTS's tinySTM integration does. `sched_switch(id)` runs first a task that
//!   announced another id, if one waits for the caller's worker.
//!
//! The name `sched_yield` belongs to the C library (POSIX); exporting it would take
//! over every caller in the process, Rust's standard library included. The function
//! is `lutra_sched_yield`, and `sched.h` defines `sched_yield()` as a macro for it.

use crate::boundary;
use crate::scheduler;
use crate::status::{CapiError, CapiResult, LUTRA_OK};
use crate::thread;
use std::ffi::{c_int, c_uint, c_void};

/// The function a task runs: `void *fn(void *arg)`, as `pthread_create`'s
/// (`sched_fn_t`).
pub type SchedFn = Option<unsafe extern "C" fn(arg: *mut c_void) -> *mut c_void>;

/// What `sched_barrier_wait` returns to the last arrival of a round.
pub const SCHED_BARRIER_SERIAL: c_int = 1;

/// Fails inside a transaction of the calling thread or task.
fn refuse_in_transaction() -> CapiResult<()> {
    if thread::in_transaction() {
        return Err(CapiError::in_transaction());
    }
    Ok(())
}

/// The calling task, or `LUTRA_ENOTASK`.
fn current_task() -> CapiResult<std::sync::Arc<lutra_sched::TaskCore>> {
    lutra_sched::current_task().ok_or_else(CapiError::no_task)
}

/// A task id (or negative status) as C's `int64_t`.
fn task_id(id: u64) -> i64 {
    i64::try_from(id).unwrap_or(i64::MAX)
}

/// LUTS's `luts_init`: starts `workers` worker threads (0: one per core), each pinned
/// to a core; more than the cores are clamped to the cores. The stack size of tasks
/// comes from `LUTRA_SCHED_STACK_KB` (default 256 KiB). Returns the number of workers
/// (at least 1), or `LUTRA_EINVAL` (`workers` negative, bad variable),
/// `LUTRA_EALREADY` (running: `sched_shutdown` first), `LUTRA_EINTASK` (called from a
/// task), `LUTRA_EINTX`. Call from a plain thread, before `sched_start`.
#[unsafe(no_mangle)]
pub extern "C" fn sched_init(workers: c_int) -> c_int {
    boundary::status("sched_init", || {
        refuse_in_transaction()?;
        let workers = usize::try_from(workers)
            .map_err(|_| CapiError::invalid(format!("{workers} workers")))?;
        let started = scheduler::init(workers)?;
        Ok(c_int::try_from(started).unwrap_or(c_int::MAX))
    })
}

/// The common part of `sched_start` and `sched_start_migratable`.
///
/// # Safety
/// As [`sched_start`].
unsafe fn start(function: &'static str, body: SchedFn, arg: *mut c_void, pinned: bool) -> i64 {
    boundary::value(function, i64::from, || {
        refuse_in_transaction()?;
        let body = body.ok_or_else(|| CapiError::invalid("fn is NULL"))?;
        // SAFETY: forwarded contract.
        let id = unsafe { scheduler::start(body, arg, pinned) }?;
        Ok(task_id(id))
    })
}

/// LUTS's `luts_start`, one task at a time: starts a task running `fn(arg)` (its
/// result is discarded), pinned to a worker chosen round robin, and returns its id
/// (> 0). Errors: `LUTRA_ENOINIT` (no `sched_init`), `LUTRA_EINVAL` (NULL `fn`),
/// `LUTRA_EINTX` (inside a transaction), `LUTRA_ENOMEM` (no stack). Any thread or
/// task.
///
/// # Safety
/// `fn` must be safe to call once with `arg`, on a worker thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sched_start(function: SchedFn, arg: *mut c_void) -> i64 {
    // SAFETY: forwarded contract.
    unsafe { start("sched_start", function, arg, true) }
}

/// As [`sched_start`], but the task may move to another worker whenever it is
/// suspended: for code that keeps no address of thread-local data (`__thread`,
/// `errno`) across a suspension.
///
/// # Safety
/// As [`sched_start`], and the above.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sched_start_migratable(function: SchedFn, arg: *mut c_void) -> i64 {
    // SAFETY: forwarded contract.
    unsafe { start("sched_start_migratable", function, arg, false) }
}

/// Sizes the barrier of [`sched_barrier_wait`]: a round opens when `parties` callers
/// wait. Call before they wait (before starting the tasks), or between rounds.
/// Returns `LUTRA_OK`, `LUTRA_EINVAL` (0), `LUTRA_EBUSY` (callers wait in the current
/// round), `LUTRA_ENOINIT`, `LUTRA_EINTX`.
#[unsafe(no_mangle)]
pub extern "C" fn sched_barrier_init(parties: c_uint) -> c_int {
    boundary::status("sched_barrier_init", || {
        refuse_in_transaction()?;
        let parties = usize::try_from(parties).unwrap_or(usize::MAX);
        if parties == 0 {
            return Err(CapiError::invalid("a barrier needs at least one party"));
        }
        scheduler::barrier_init(parties)?;
        Ok(LUTRA_OK)
    })
}

/// LUTS's `luts_barrier_wait`: waits until the barrier's parties (tasks or threads)
/// have all called it in this round; a waiting task lets its worker run other tasks.
/// Returns [`SCHED_BARRIER_SERIAL`] (1) to the last arrival, 0 to the others, or
/// `LUTRA_EINVAL` (not sized), `LUTRA_EINTX`, `LUTRA_ENOINIT`.
#[unsafe(no_mangle)]
pub extern "C" fn sched_barrier_wait() -> c_int {
    boundary::status("sched_barrier_wait", || {
        refuse_in_transaction()?;
        let barrier = scheduler::barrier()?;
        let _counted = scheduler::arrive_at_barrier();
        Ok(if barrier.wait() {
            SCHED_BARRIER_SERIAL
        } else {
            0
        })
    })
}

/// LUTS's `luts_yield` (`sched_yield()` in `sched.h`): the calling task goes to the
/// back of the run queue and its worker runs another. Outside tasks, yields the
/// thread (POSIX's `sched_yield`). Returns `LUTRA_OK`, or `LUTRA_EINTX`.
#[unsafe(no_mangle)]
pub extern "C" fn lutra_sched_yield() -> c_int {
    boundary::status("sched_yield", || {
        refuse_in_transaction()?;
        lutra_sched::yield_now();
        Ok(LUTRA_OK)
    })
}

/// LUTS's `luts_setid`: announces the transaction the calling task is about to run
/// (any number; 0 is "none"), for `sched_switch` and the scheduler's policies. May
/// be called inside a transaction. Returns `LUTRA_OK`, or `LUTRA_ENOTASK`.
#[unsafe(no_mangle)]
pub extern "C" fn sched_setid(id: u64) -> c_int {
    boundary::status("sched_setid", || {
        current_task()?;
        lutra_sched::set_tx_id(id);
        Ok(LUTRA_OK)
    })
}

/// LUTS's `luts_switch`: if a task that may run on the caller's worker announced a
/// transaction id other than `id`, it runs now and the caller goes to the back of the
/// run queue; otherwise the caller goes on. Outside tasks, yields the thread.
/// Returns `LUTRA_OK`, or `LUTRA_EINTX`.
#[unsafe(no_mangle)]
pub extern "C" fn sched_switch(id: u64) -> c_int {
    boundary::status("sched_switch", || {
        refuse_in_transaction()?;
        lutra_sched::switch(id);
        Ok(LUTRA_OK)
    })
}

/// The calling task's id (> 0, as `sched_start` returned it), or `LUTRA_ENOTASK`.
/// Any time.
#[unsafe(no_mangle)]
pub extern "C" fn sched_self() -> i64 {
    boundary::value("sched_self", i64::from, || {
        Ok(task_id(current_task()?.id()))
    })
}

/// The index (from 0) of the worker running the calling task, or `LUTRA_ENOTASK`.
/// Any time; constant for a task from `sched_start`.
#[unsafe(no_mangle)]
pub extern "C" fn sched_worker() -> c_int {
    boundary::status("sched_worker", || {
        current_task()?;
        let worker = lutra_sched::worker_index().ok_or_else(CapiError::no_task)?;
        Ok(c_int::try_from(worker).unwrap_or(c_int::MAX))
    })
}

/// Waits until every task started so far (and every task they start) has finished;
/// the workers go on, and more tasks may be started afterwards (`pthread_join` for
/// all tasks at once). Returns `LUTRA_OK`, or `LUTRA_EINTASK` (called from a task),
/// `LUTRA_EINTX`, `LUTRA_ENOINIT`.
#[unsafe(no_mangle)]
pub extern "C" fn sched_wait() -> c_int {
    boundary::status("sched_wait", || {
        refuse_in_transaction()?;
        scheduler::wait()?;
        Ok(LUTRA_OK)
    })
}

/// LUTS's `luts_shutdown`: waits for every task as `sched_wait`, then stops the
/// workers and forgets the barrier; `sched_init` may start the scheduler again.
/// Returns `LUTRA_OK`, or `LUTRA_EINTASK`, `LUTRA_EINTX`, `LUTRA_ENOINIT`.
#[unsafe(no_mangle)]
pub extern "C" fn sched_shutdown() -> c_int {
    boundary::status("sched_shutdown", || {
        refuse_in_transaction()?;
        scheduler::shutdown()?;
        Ok(LUTRA_OK)
    })
}
