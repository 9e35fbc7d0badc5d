//! What the current thread is running: the worker index, the task, the runtime.
//!
//! Every function here reads the thread-locals afresh and is `#[inline(never)]`: a
//! native task may resume on another worker after any suspension, and a thread-local
//! address computed before it would belong to the old thread.
//!
//! # Invariants
//! - `TASK` is the address of the task being resumed on this thread, or null: the
//!   worker sets it from the `Arc` it holds for the whole slice and clears it before
//!   letting that `Arc` go, so the address is valid while it is set (no reference is
//!   counted for it; [`current_task`] counts one for what it hands out).

use crate::shared::Shared;
use crate::task::{Step, TaskCore};
use corosensei::Yielder;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

thread_local! {
    static TASK: Cell<*const TaskCore> = const { Cell::new(std::ptr::null()) };
    static WORKER: Cell<Option<usize>> = const { Cell::new(None) };
    static RUNTIME: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
    static HANDOFF: RefCell<Option<Arc<TaskCore>>> = const { RefCell::new(None) };
}

/// The yielder type of native tasks.
pub(crate) type TaskYielder = Yielder<(), Step>;

/// Marks the current thread as worker `index` of `shared` (worker start).
#[inline(never)]
pub(crate) fn enter_worker(shared: Arc<Shared>, index: usize) {
    WORKER.with(|worker| worker.set(Some(index)));
    RUNTIME.with(|runtime| *runtime.borrow_mut() = Some(shared));
}

/// Forgets the worker marks (worker exit).
#[inline(never)]
pub(crate) fn leave_worker() {
    WORKER.with(|worker| worker.set(None));
    RUNTIME.with(|runtime| runtime.borrow_mut().take());
}

/// Sets (or clears) the task the current worker is resuming; `task` stays held by
/// the caller until it clears it (module invariants).
#[inline(never)]
pub(crate) fn set_task(task: Option<&Arc<TaskCore>>) {
    TASK.with(|current| current.set(task.map_or(std::ptr::null(), Arc::as_ptr)));
}

/// Whether a task is being resumed on this thread (a worker inside a slice).
#[inline(never)]
pub(crate) fn in_slice() -> bool {
    !TASK.with(Cell::get).is_null()
}

/// The task being resumed on this thread, borrowed for the current call.
fn task_ref<'a>() -> Option<&'a TaskCore> {
    // SAFETY: a set address is that of a task its worker holds until it clears it
    // (module invariants); the callers use the reference within the slice.
    unsafe { TASK.with(Cell::get).as_ref() }
}

/// The direct switch's slot (see `worker.rs`): keeps `task`, woken during the current
/// task's slice on this worker, to run next without a trip through the run queue.
/// Returns the task the slot held before (woken earlier in the same slice; it goes to
/// the run queue instead), or gives `task` back when no task is being resumed on this
/// thread (a wake-up outside a slice: the run queue's path).
#[inline(never)]
pub(crate) fn hand_off(task: Arc<TaskCore>) -> Option<Arc<TaskCore>> {
    if !in_slice() {
        return Some(task);
    }
    HANDOFF.with(|slot| slot.borrow_mut().replace(task))
}

/// Empties the direct switch's slot (the worker, at the end of a slice).
#[inline(never)]
pub(crate) fn take_handoff() -> Option<Arc<TaskCore>> {
    HANDOFF.with(|slot| slot.borrow_mut().take())
}

/// The task being resumed on this thread, if any.
#[inline(never)]
pub fn current_task() -> Option<Arc<TaskCore>> {
    let task = task_ref()?;
    // SAFETY: the task is alive (see `task_ref`); the count taken here is the one
    // the returned `Arc` gives back.
    unsafe {
        Arc::increment_strong_count(task);
        Some(Arc::from_raw(task))
    }
}

/// The index of the worker running the current thread, if it is one.
#[inline(never)]
pub fn worker_index() -> Option<usize> {
    WORKER.with(Cell::get)
}

/// The index of the current thread among the workers of `shared`, if it is one.
#[inline(never)]
pub(crate) fn worker_of(shared: &Shared) -> Option<usize> {
    let ours = RUNTIME.with(|runtime| {
        runtime
            .borrow()
            .as_ref()
            .is_some_and(|runtime| std::ptr::eq(Arc::as_ptr(runtime), shared))
    });
    if ours { worker_index() } else { None }
}

/// The runtime of the current worker, if the current thread is one.
#[inline(never)]
pub(crate) fn runtime() -> Option<Arc<Shared>> {
    RUNTIME.with(|runtime| runtime.borrow().clone())
}

/// Runs `f` with the task being resumed on this thread, if any. `f` must not suspend.
#[inline(never)]
pub(crate) fn with_task<R>(f: impl FnOnce(&TaskCore) -> R) -> Option<R> {
    task_ref().map(f)
}

/// Suspends the current native task with `step`; returns false (doing nothing) when
/// the current thread is not running a native task.
#[inline(never)]
pub(crate) fn suspend(step: Step) -> bool {
    let Some(yielder) = with_task(|task| task.yielder.load(std::sync::atomic::Ordering::Acquire))
    else {
        return false;
    };
    if yielder.is_null() {
        return false;
    }
    // SAFETY: a native task publishes its yielder when its body starts; the yielder
    // lives on the task's own stack for as long as the body runs, and we are inside
    // that body (the current task is this native task).
    unsafe { (*(yielder as *const TaskYielder)).suspend(step) };
    true
}
