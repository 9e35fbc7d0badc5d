//! What the current thread is running: the worker, its runtime, the task.
//!
//! A worker keeps what it is doing in a [`Worker`] on its own stack and names it in
//! one thread-local pointer. The worker itself uses its `Worker` directly (no
//! thread-local lookup per slice); code running inside a slice (a task's body, a
//! waker it calls) finds it through the pointer, once per call: in a shared library
//! every thread-local lookup is a call to `__tls_get_addr`.
//!
//! Every function here that reads the pointer is `#[inline(never)]` and reads it
//! afresh: a native task may resume on another worker after any suspension, and a
//! thread-local address computed before it would belong to the old thread. For the
//! same reason the closures given to [`with_worker`] and [`with_task`] must not
//! suspend.
//!
//! # Invariants
//! - `CURRENT` is the address of the `Worker` of the worker running on this thread, or
//!   null: the worker sets it when it starts and clears it before the `Worker` goes
//!   (an [`Entered`] guard, also on unwinding), so a set address is valid.
//! - A `Worker`'s `task` is the address of the task being resumed on this thread, or
//!   null: the worker sets it from the `Arc` it holds for the whole slice and clears it
//!   before letting that `Arc` go, so the address is valid while it is set (no
//!   reference is counted for it; [`current_task`] counts one for what it hands out).
//! - Only the thread whose `CURRENT` names a `Worker` touches it (its cells are not
//!   shared with other threads). Two threads may name a `Worker` of the same index at
//!   once: a carrier that lost its seat while blocked in a call (`seat.rs`) keeps
//!   its own `Worker` until its slice ends, while another carrier runs the worker;
//!   what the old one's slice leaves (its direct-switch slot) goes to the shared
//!   queues.

use crate::carrier::CarrierRecord;
use crate::shared::Shared;
use crate::sync::thread_local;
use crate::task::{Step, TaskCore};
use corosensei::Yielder;
use std::cell::Cell;
use std::sync::Arc;

thread_local! {
    static CURRENT: Cell<*const Worker> = const { Cell::new(std::ptr::null()) };
}

/// The yielder type of native tasks.
pub(crate) type TaskYielder = Yielder<(), Step>;

/// What a worker thread is running: its runtime, its index, the task of the slice and
/// the direct switch's slot (see `worker.rs`).
pub(crate) struct Worker {
    shared: Arc<Shared>,
    index: usize,
    carrier: Arc<CarrierRecord>,
    task: Cell<*const TaskCore>,
    handoff: Cell<Option<Arc<TaskCore>>>,
}

impl Worker {
    /// Worker `index` of `shared`, run by `carrier`, running nothing yet.
    pub(crate) fn new(shared: Arc<Shared>, index: usize, carrier: Arc<CarrierRecord>) -> Self {
        Self {
            shared,
            index,
            carrier,
            task: Cell::new(std::ptr::null()),
            handoff: Cell::new(None),
        }
    }

    /// The runtime this worker belongs to.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The carrier thread running this worker (`carrier.rs`).
    pub(crate) fn carrier(&self) -> &Arc<CarrierRecord> {
        &self.carrier
    }

    /// This worker's index among its runtime's workers.
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// Names this worker as the current thread's until the guard is dropped.
    pub(crate) fn enter(&self) -> Entered<'_> {
        CURRENT.with(|current| current.set(self));
        Entered(std::marker::PhantomData)
    }

    /// Sets (or clears) the task this worker is resuming; `task` stays held by the
    /// caller until it clears it (module invariants).
    pub(crate) fn set_task(&self, task: Option<&Arc<TaskCore>>) {
        self.task.set(task.map_or(std::ptr::null(), Arc::as_ptr));
    }

    /// Whether this worker is inside a slice.
    fn in_slice(&self) -> bool {
        !self.task.get().is_null()
    }

    /// The task this worker is resuming, borrowed for the current call.
    fn task<'a>(&self) -> Option<&'a TaskCore> {
        // SAFETY: a set address is that of a task the worker holds until it clears it
        // (module invariants); the callers use the reference within the slice.
        unsafe { self.task.get().as_ref() }
    }

    /// This worker's index if it belongs to `shared`.
    pub(crate) fn index_in(&self, shared: &Shared) -> Option<usize> {
        std::ptr::eq(Arc::as_ptr(&self.shared), shared).then_some(self.index)
    }

    /// The direct switch's slot (see `worker.rs`): keeps `task`, woken during the
    /// current slice, to run next without a trip through the run queue. Returns the
    /// task the slot held before (woken earlier in the same slice; it goes to the run
    /// queue instead), or gives `task` back outside a slice (a wake-up outside a
    /// slice: the run queue's path).
    pub(crate) fn hand_off(&self, task: Arc<TaskCore>) -> Option<Arc<TaskCore>> {
        if !self.in_slice() {
            return Some(task);
        }
        self.handoff.replace(Some(task))
    }

    /// Empties the direct switch's slot (the worker, at the end of a slice).
    pub(crate) fn take_handoff(&self) -> Option<Arc<TaskCore>> {
        self.handoff.take()
    }
}

/// While it lives, the current thread's `CURRENT` names a worker ([`Worker::enter`]).
pub(crate) struct Entered<'a>(std::marker::PhantomData<&'a Worker>);

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        CURRENT.with(|current| current.set(std::ptr::null()));
    }
}

/// The worker running the current thread, borrowed for the current call.
#[inline(always)]
fn worker<'a>() -> Option<&'a Worker> {
    // SAFETY: a set address is that of the worker's `Worker`, alive until it clears
    // it (module invariants); callers use the reference within the call.
    unsafe { CURRENT.with(Cell::get).as_ref() }
}

/// Runs `f` with the worker running the current thread, if it is one. `f` must not
/// suspend.
#[inline(never)]
pub(crate) fn with_worker<R>(f: impl FnOnce(Option<&Worker>) -> R) -> R {
    f(worker())
}

/// Whether a task is being resumed on this thread (a worker inside a slice).
#[inline(never)]
pub(crate) fn in_slice() -> bool {
    worker().is_some_and(Worker::in_slice)
}

/// The task being resumed on this thread, if any.
#[inline(never)]
pub fn current_task() -> Option<Arc<TaskCore>> {
    worker()?.task().map(counted)
}

/// A counted reference to `task`, a task held by its worker for the slice.
fn counted(task: &TaskCore) -> Arc<TaskCore> {
    // SAFETY: the task is alive (see `Worker::task`); the count taken here is the
    // one the returned `Arc` gives back.
    unsafe {
        Arc::increment_strong_count(task);
        Arc::from_raw(task)
    }
}

/// The index of the worker running the current thread, if it is one.
#[inline(never)]
pub fn worker_index() -> Option<usize> {
    worker().map(|worker| worker.index)
}

/// The index of the current thread among the workers of `shared`, if it is one.
#[inline(never)]
pub(crate) fn worker_of(shared: &Shared) -> Option<usize> {
    worker()?.index_in(shared)
}

/// The runtime of the current worker, if the current thread is one.
#[inline(never)]
pub(crate) fn runtime() -> Option<Arc<Shared>> {
    worker().map(|worker| worker.shared.clone())
}

/// The task being resumed on this thread and its worker's runtime, if any.
#[inline(never)]
pub(crate) fn task_and_runtime() -> Option<(Arc<TaskCore>, Arc<Shared>)> {
    let worker = worker()?;
    Some((counted(worker.task()?), worker.shared.clone()))
}

/// Runs `f` with the task being resumed on this thread, if any. `f` must not suspend.
#[inline(never)]
pub(crate) fn with_task<R>(f: impl FnOnce(&TaskCore) -> R) -> Option<R> {
    worker()?.task().map(f)
}

/// Suspends the current native task with `step`; returns false (doing nothing) when
/// the current thread is not running a native task.
#[inline(never)]
pub(crate) fn suspend(step: Step) -> bool {
    // ORDERING: Acquire, pairs with the Release stores of `yielder` in native.rs (the
    // yielder's address published when the body starts, withdrawn when it ends).
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
