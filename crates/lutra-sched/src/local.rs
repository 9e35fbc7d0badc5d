//! Task-local storage: one value per task for a client library. A task is not a
//! thread: every task a worker runs shares the worker's `thread_local!`s, so a library
//! that keeps per-thread state (the C API's transaction descriptor, jump buffer and
//! last error) keeps it here when it runs in a task.
//!
//! # Invariants
//! - A task holds at most one value, of one type, created by the first
//!   [`task_local`] call of the task and dropped with the task's record.
//! - Only the task itself reaches its value (through [`task_local`], which reads the
//!   task being resumed on the calling thread); other threads only drop it.

use crate::context;
use std::any::Any;
use std::ptr::NonNull;
use std::sync::OnceLock;

/// The value of one task (see the module header).
#[derive(Default)]
pub(crate) struct TaskLocal(OnceLock<Box<dyn Any + Send>>);

// SAFETY: the value is only reached by the task that owns it (module invariants), and a
// task runs on one thread at a time; a worker hands it to the next through the run
// queue's lock and the state word, which order one slice before the next. Other
// threads only drop the value, which `Send` allows.
unsafe impl Sync for TaskLocal {}

/// The current task's local value of type `T`, created by `init` the first time the
/// task asks; `None` outside tasks.
///
/// The pointer stays valid until the task finishes (its record lives as long as the
/// task can run), also across suspensions and, for a migratable task, on whichever
/// worker resumes it. Only the task itself may use it: the value is not shared with
/// other threads. `init` must not suspend the task.
///
/// # Panics
/// If the task's value has another type: a task holds one value, for one client
/// library.
///
/// ```
/// use std::cell::Cell;
/// let runtime = lutra_sched::Runtime::builder().workers(1).build();
/// let task = runtime.spawn(|| {
///     let counter = lutra_sched::task_local(|| Cell::new(0u32)).unwrap();
///     lutra_sched::yield_now();
///     // SAFETY: the current task's own value, used by the task itself.
///     let counter = unsafe { counter.as_ref() };
///     counter.set(counter.get() + 1);
///     counter.get()
/// });
/// assert_eq!(task.join().unwrap(), 1);
/// assert!(lutra_sched::task_local(|| Cell::new(0u32)).is_none());
/// ```
#[inline(never)]
pub fn task_local<T: Any + Send>(init: impl FnOnce() -> T) -> Option<NonNull<T>> {
    context::with_task(|task| {
        let value = task.local.0.get_or_init(|| Box::new(init()));
        let value = value.downcast_ref::<T>().unwrap_or_else(|| {
            panic!(
                "task {} already holds a task-local value of another type than {}",
                task.id(),
                std::any::type_name::<T>()
            )
        });
        NonNull::from(value)
    })
}
