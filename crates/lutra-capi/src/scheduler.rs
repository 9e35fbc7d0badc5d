//! The process-wide scheduler behind `sched.h`: one `lutra_sched::Runtime`, where C
//! tasks are placed on its workers, what a C task runs, and the barrier of
//! `sched_barrier_wait`.
//!
//! # Invariants
//! - `SCHEDULER` is `Some` between a successful `sched_init` and the matching
//!   `sched_shutdown`. `LIFECYCLE` serializes the two, so the write lock of
//!   `SCHEDULER` is only requested once no task runs: a task blocked on the read lock
//!   behind a waiting writer would block its worker.
//! - Tasks are spawned under the read lock; the runtime is dropped (its workers
//!   joined) only by the thread calling `sched_shutdown`, never by a worker.
//! - A C task's `stm.h` state is discarded when its function returns, before the task
//!   counts as finished: once `sched_wait` returns, no C task that returned is
//!   registered with the engine any more.
//! - A task counts as live from its start until its body decrements `live`, or, for
//!   a body that never got there (a stack overflow abandons its frames:
//!   `lutra-sched`'s `overflow.rs`), until its join handle, kept in `Counts::started`,
//!   reports it finished with a failure: `sched_wait` reaps those on every check.
//!
//! # Protocol: shutdown
//! 1. Take `LIFECYCLE`.
//! 2. Under the read lock, wait until every task has finished (running tasks may
//!    still start tasks meanwhile).
//! 3. Take the runtime out under the write lock.
//! 4. Drop it: it waits for tasks started between 2 and 3 (by plain threads), then
//!    stops and joins the workers.

use crate::status::{
    CapiError, CapiResult, LUTRA_EALREADY, LUTRA_EBUSY, LUTRA_EDEADLK, LUTRA_EINTASK,
    LUTRA_ENOINIT, LUTRA_ENOMEM,
};
use crate::thread;
use lutra_sched::{Barrier, JoinHandle, Runtime};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, RwLock, RwLockReadGuard};

/// Environment variable: the stack size of C tasks, in KiB (read by `sched_init`).
pub(crate) const STACK_VAR: &str = "LUTRA_SCHED_STACK_KB";

/// The running scheduler.
struct Scheduler {
    runtime: Runtime,
    workers: usize,
    /// The number of pinned tasks started so far: the next one goes to worker
    /// `next % workers` (round robin).
    next: AtomicUsize,
    /// The barrier of `sched_barrier_wait`, once `sched_barrier_init` sized it.
    barrier: Mutex<Option<Arc<Barrier>>>,
    /// What `sched_wait` watches: unfinished tasks, and those waiting at the barrier.
    progress: Arc<Progress>,
}

/// Counts of the tasks started through `sched_start`, changed under one lock and
/// announced to `sched_wait` (see [`wait`]).
#[derive(Default)]
struct Progress {
    counts: Mutex<Counts>,
    changed: Condvar,
}

#[derive(Default)]
struct Counts {
    /// Started and not finished.
    live: usize,
    /// Inside `sched_barrier_wait` (arrived, not yet released).
    at_barrier: usize,
    /// The join handles of tasks started and not yet reaped.
    started: Vec<JoinHandle<()>>,
    /// `started.len()` after the last reaping by `sched_start` (which reaps again
    /// once the list has doubled: amortized constant time per start).
    reaped_at: usize,
}

impl Counts {
    /// Forgets the tasks that finished; one whose body did not return (it failed: a
    /// stack overflow) stops counting as live here, as its body could not say so.
    fn reap(&mut self) {
        let mut failed = 0;
        self.started.retain(|handle| {
            if !handle.is_finished() {
                return true;
            }
            failed += usize::from(handle.failed());
            false
        });
        self.live -= failed;
        self.reaped_at = self.started.len();
    }
}

impl Progress {
    fn update(&self, change: impl FnOnce(&mut Counts)) {
        change(&mut self.counts.lock().unwrap_or_else(PoisonError::into_inner));
        self.changed.notify_all();
    }
}

/// A task's stay inside `sched_barrier_wait`, counted while it lasts.
pub(crate) struct AtBarrier(Option<Arc<Progress>>);

impl Drop for AtBarrier {
    fn drop(&mut self) {
        if let Some(progress) = self.0.take() {
            progress.update(|counts| counts.at_barrier -= 1);
        }
    }
}

/// Counts the calling task (if it is one) as waiting at the barrier until the
/// returned guard is dropped.
pub(crate) fn arrive_at_barrier() -> AtBarrier {
    if lutra_sched::current_task().is_none() {
        return AtBarrier(None);
    }
    let progress = running()
        .ok()
        .and_then(|guard| guard.as_ref().map(|scheduler| scheduler.progress.clone()));
    if let Some(progress) = &progress {
        progress.update(|counts| counts.at_barrier += 1);
    }
    AtBarrier(progress)
}

static SCHEDULER: RwLock<Option<Scheduler>> = RwLock::new(None);
static LIFECYCLE: Mutex<()> = Mutex::new(());

/// Whether `SCHEDULER` is `Some` (written under its write lock, read without it).
static STARTED: AtomicBool = AtomicBool::new(false);
/// This process is the `fork()`ed child of one whose scheduler ran: its workers do
/// not exist here, and the scheduler's locks may be held by threads that do not
/// either. Every call that needs the scheduler fails (see [`lost_in_fork`]).
static LOST_IN_FORK: AtomicBool = AtomicBool::new(false);

/// In the child of a `fork` (`fork.rs`): a scheduler that ran in the parent is lost.
pub(crate) fn forget_after_fork() {
    if STARTED.load(Ordering::Relaxed) {
        LOST_IN_FORK.store(true, Ordering::Relaxed);
    }
}

/// Fails in a `fork()`ed child whose parent ran the scheduler.
fn refuse_if_lost() -> CapiResult<()> {
    if LOST_IN_FORK.load(Ordering::Relaxed) {
        return Err(lost_in_fork());
    }
    Ok(())
}

#[cold]
fn lost_in_fork() -> CapiError {
    CapiError::new(
        LUTRA_ENOINIT,
        "this process was fork()ed from one whose scheduler ran: the workers are not \
         carried over to a child, and the scheduler cannot be used (or started again) here",
    )
}

fn no_scheduler() -> CapiError {
    CapiError::new(
        LUTRA_ENOINIT,
        "the scheduler is not initialized (call sched_init first)",
    )
}

/// The running scheduler, under the read lock.
fn running() -> CapiResult<RwLockReadGuard<'static, Option<Scheduler>>> {
    refuse_if_lost()?;
    let guard = SCHEDULER.read().unwrap_or_else(PoisonError::into_inner);
    if guard.is_none() {
        return Err(no_scheduler());
    }
    Ok(guard)
}

/// Fails when called from a worker thread (a task): `sched_wait` and
/// `sched_shutdown` would wait for the caller, and `sched_init` could wait for a
/// shutdown that waits for the caller.
fn refuse_in_task(what: &str) -> CapiResult<()> {
    if lutra_sched::worker_index().is_some() {
        return Err(CapiError::new(
            LUTRA_EINTASK,
            format!("{what} is for plain threads, not tasks"),
        ));
    }
    Ok(())
}

/// The stack size asked by the environment variable's value `text`, if any.
fn stack_size(text: Option<&str>) -> CapiResult<Option<usize>> {
    let Some(text) = text.map(str::trim).filter(|text| !text.is_empty()) else {
        return Ok(None);
    };
    match text.parse::<usize>() {
        Ok(kib) if (16..=1 << 20).contains(&kib) => Ok(Some(kib * 1024)),
        _ => Err(CapiError::invalid(format!(
            "{STACK_VAR}={text}: expected a size in KiB from 16 to 1048576"
        ))),
    }
}

/// Starts the workers: `workers` of them, or one per core for 0, never more than the
/// cores. Returns how many run.
pub(crate) fn init(workers: usize) -> CapiResult<usize> {
    refuse_in_task("sched_init")?;
    refuse_if_lost()?;
    let _lifecycle = LIFECYCLE.lock().unwrap_or_else(PoisonError::into_inner);
    if SCHEDULER
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .is_some()
    {
        return Err(CapiError::new(
            LUTRA_EALREADY,
            "the scheduler is already initialized (sched_shutdown first)",
        ));
    }
    let mut builder = Runtime::builder();
    if workers > 0 {
        builder = builder.workers(workers);
    }
    if let Some(bytes) = stack_size(std::env::var(STACK_VAR).ok().as_deref())? {
        builder = builder.stack_size(bytes);
    }
    let runtime = builder.build();
    let workers = runtime.workers();
    let mut scheduler = SCHEDULER.write().unwrap_or_else(PoisonError::into_inner);
    STARTED.store(true, Ordering::Relaxed);
    *scheduler = Some(Scheduler {
        runtime,
        workers,
        next: AtomicUsize::new(0),
        barrier: Mutex::new(None),
        progress: Arc::default(),
    });
    Ok(workers)
}

/// A C task's function and argument.
struct CTask {
    function: unsafe extern "C" fn(arg: *mut c_void) -> *mut c_void,
    arg: *mut c_void,
}

// SAFETY: as with `pthread_create`, the caller hands `arg` over to the new task, which
// may run on another thread (`start`'s contract).
unsafe impl Send for CTask {}

impl CTask {
    /// The task's body: the function (until it returns or calls `pthread_exit`),
    /// then what a thread's exit does to its `stm.h` state (rolled back if a
    /// transaction was left open, unregistered).
    fn run(self) {
        // SAFETY: `function` may be called with `arg` (`start`'s contract), here in
        // the task that runs it; `pthread_exit` in it ends the task here too.
        unsafe { crate::task_exit::run(self.function, self.arg) };
        thread::discard();
    }
}

/// Starts a task running `function(arg)`, pinned to the next worker in round robin,
/// or migratable; returns its id.
///
/// # Safety
/// `function` must be safe to call once with `arg`, on any thread.
pub(crate) unsafe fn start(
    function: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
    arg: *mut c_void,
    pinned: bool,
) -> CapiResult<u64> {
    let guard = running()?;
    let scheduler = guard.as_ref().ok_or_else(no_scheduler)?;
    let mut builder = scheduler.runtime.task();
    if pinned {
        let worker = scheduler.next.fetch_add(1, Ordering::Relaxed) % scheduler.workers;
        builder = builder.pinned_to(worker);
    }
    let task = CTask { function, arg };
    let progress = scheduler.progress.clone();
    progress.update(|counts| counts.live += 1);
    let finished = progress.clone();
    let handle = builder
        .spawn(move || {
            task.run();
            finished.update(|counts| counts.live -= 1);
        })
        .map_err(|error| {
            progress.update(|counts| counts.live -= 1);
            CapiError::new(LUTRA_ENOMEM, format!("no task stack: {error}"))
        })?;
    let id = handle.task().id();
    progress.update(|counts| {
        counts.started.push(handle);
        if counts.started.len() >= 2 * counts.reaped_at.max(32) {
            counts.reap();
        }
    });
    Ok(id)
}

/// Sizes the barrier: rounds open with `parties` callers.
pub(crate) fn barrier_init(parties: usize) -> CapiResult<()> {
    let guard = running()?;
    let scheduler = guard.as_ref().ok_or_else(no_scheduler)?;
    let mut barrier = scheduler
        .barrier
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    match barrier.as_ref() {
        Some(current) => current.set_parties(parties).map_err(|waiting| {
            CapiError::new(
                LUTRA_EBUSY,
                format!("{waiting} caller(s) wait at the barrier: resize it between rounds"),
            )
        }),
        None => {
            *barrier = Some(Arc::new(Barrier::new(parties)));
            Ok(())
        }
    }
}

/// The barrier, to wait on once the read lock is released.
pub(crate) fn barrier() -> CapiResult<Arc<Barrier>> {
    let guard = running()?;
    let scheduler = guard.as_ref().ok_or_else(no_scheduler)?;
    let barrier = scheduler
        .barrier
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    barrier.clone().ok_or_else(|| {
        CapiError::invalid("the barrier has no size yet (call sched_barrier_init first)")
    })
}

/// Waits until every task started so far has finished.
pub(crate) fn wait() -> CapiResult<()> {
    refuse_in_task("sched_wait")?;
    let guard = running()?;
    let scheduler = guard.as_ref().ok_or_else(no_scheduler)?;
    let progress = &scheduler.progress;
    let mut counts = progress
        .counts
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    loop {
        counts.reap();
        if counts.live == 0 {
            break;
        }
        if let Some(report) = deadlock(scheduler, &counts) {
            eprintln!("lutra: sched_wait: deadlock: {report}");
            return Err(CapiError::new(LUTRA_EDEADLK, report));
        }
        // A task enters the barrier's round just after it is counted there, and a
        // task that overflowed its stack finishes, with no signal: the checks are
        // also re-run on a period. The report rests on the state it reads, never
        // on how long anything took.
        counts = progress
            .changed
            .wait_timeout(counts, RECHECK)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
    drop(counts);
    scheduler.runtime.wait_idle();
    Ok(())
}

/// How often `sched_wait` re-checks for a deadlock without a change announced.
const RECHECK: std::time::Duration = std::time::Duration::from_millis(20);

/// The report of a deadlock at the barrier, if `counts` show one: every unfinished
/// task waits in the barrier's current round, which needs more parties than wait.
/// Tasks cannot arrive, nor can the caller of `sched_wait`: the round never
/// completes. (A task counted at the barrier but not in the round — the round has
/// just completed, or it has not entered it yet — makes `waiting` smaller than
/// `at_barrier`: no report.)
fn deadlock(scheduler: &Scheduler, counts: &Counts) -> Option<String> {
    if counts.at_barrier != counts.live {
        return None;
    }
    let barrier = scheduler
        .barrier
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()?;
    let waiting = barrier.waiting();
    let parties = barrier.parties();
    (waiting >= counts.at_barrier && waiting < parties).then(|| {
        format!(
            "all {} unfinished task(s) wait at the barrier, which opens with {parties} \
             parties ({waiting} waiting): no task is left to arrive (sched_barrier_init \
             was given more parties than there are tasks)",
            counts.live
        )
    })
}

/// Waits for every task, then stops the workers (see the shutdown protocol).
pub(crate) fn shutdown() -> CapiResult<()> {
    refuse_in_task("sched_shutdown")?;
    refuse_if_lost()?;
    let _lifecycle = LIFECYCLE.lock().unwrap_or_else(PoisonError::into_inner);
    wait()?;
    let scheduler = SCHEDULER
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
        .ok_or_else(no_scheduler)?;
    STARTED.store(false, Ordering::Relaxed);
    drop(scheduler);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_sizes_in_kib() {
        assert_eq!(stack_size(Some("512")), Ok(Some(512 * 1024)));
        assert_eq!(stack_size(Some(" ")), Ok(None));
        assert_eq!(stack_size(None), Ok(None));
        for bad in ["4", "lots", "-1"] {
            let error = stack_size(Some(bad)).unwrap_err();
            assert_eq!(error.code, crate::status::LUTRA_EINVAL);
            assert!(error.message.contains(STACK_VAR));
        }
    }
}
