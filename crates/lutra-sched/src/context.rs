//! What the current thread is running: the worker index, the task, the runtime.
//!
//! Every function here reads the thread-locals afresh and is `#[inline(never)]`: a
//! native task may resume on another worker after any suspension, and a thread-local
//! address computed before it would belong to the old thread.

use crate::shared::Shared;
use crate::task::{Step, TaskCore};
use corosensei::Yielder;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

thread_local! {
    static TASK: RefCell<Option<Arc<TaskCore>>> = const { RefCell::new(None) };
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

/// Sets (or clears) the task the current worker is resuming.
#[inline(never)]
pub(crate) fn set_task(task: Option<Arc<TaskCore>>) {
    TASK.with(|current| *current.borrow_mut() = task);
}

/// The direct switch's slot (see `worker.rs`): keeps `task`, woken during the current
/// task's slice on this worker, to run next without a trip through the run queue.
/// Returns the task the slot held before (woken earlier in the same slice; it goes to
/// the run queue instead), or gives `task` back when no task is being resumed on this
/// thread (a wake-up outside a slice: the run queue's path).
#[inline(never)]
pub(crate) fn hand_off(task: Arc<TaskCore>) -> Option<Arc<TaskCore>> {
    if TASK.with(|current| current.borrow().is_none()) {
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
    TASK.with(|current| current.borrow().clone())
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
    TASK.with(|current| current.borrow().as_deref().map(f))
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
