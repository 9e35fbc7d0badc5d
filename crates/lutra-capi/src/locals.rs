//! What the C API keeps per "thread" — the registered transaction state (`thread.rs`)
//! and the last error (`last_error.rs`) — and where: in the calling task's task-local
//! value when called from a task of the scheduler (`sched.h`), otherwise in a Rust
//! thread-local. Several tasks run on one worker thread, so a thread-local would mix
//! their transactions; with this, each task is a thread for `stm.h`.
//!
//! # Invariants
//! - Code running in a task only ever reaches that task's [`Locals`]; a plain thread
//!   only its own.
//! - The task's value is reached through `lutra_sched::task_local`, which re-reads the
//!   current task on every call: a migratable task that moved to another worker still
//!   finds its own state.
//! - Whether a thread is a worker is settled at its first call and never changes: a
//!   worker runs C code only inside tasks, a plain thread never becomes a worker. Plain
//!   threads thus pay one thread-local access per call, as before tasks existed.

use crate::last_error::LastError;
use crate::thread::OwnedThreadTx;
use std::cell::{Cell, RefCell};
use std::ptr::NonNull;

/// The per-thread (or per-task) state of the C API.
pub(crate) struct Locals {
    /// The registration of `stm_init_thread`, if any.
    pub(crate) tx: RefCell<Option<OwnedThreadTx>>,
    /// The last error.
    pub(crate) last_error: RefCell<Option<LastError>>,
    /// The address of a C task's exit point (a `sigjmp_buf`) while its function
    /// runs (`task_exit.rs`); 0 otherwise, and always on a plain thread. An address
    /// rather than a pointer: the value may move with its task to another worker.
    pub(crate) task_exit: Cell<usize>,
}

impl Locals {
    const fn new() -> Self {
        Self {
            tx: RefCell::new(None),
            last_error: RefCell::new(None),
            task_exit: Cell::new(0),
        }
    }
}

/// A thread's own [`Locals`], and whether it is a worker of the scheduler (whose C
/// code runs in tasks, each with its own `Locals`).
struct ThreadLocals {
    /// `None` until the thread's first call; a thread never changes kind.
    worker: Cell<Option<bool>>,
    locals: Locals,
}

impl ThreadLocals {
    fn is_worker(&self) -> bool {
        match self.worker.get() {
            Some(worker) => worker,
            None => {
                let worker = lutra_sched::worker_index().is_some();
                self.worker.set(Some(worker));
                worker
            }
        }
    }
}

thread_local! {
    static THREAD: ThreadLocals = const {
        ThreadLocals {
            worker: Cell::new(None),
            locals: Locals::new(),
        }
    };
}

/// Runs `body` with the calling task's state, or the calling thread's outside tasks.
/// `None` while the thread is being torn down (its thread-locals are gone).
///
/// In a task, `body` may suspend the task (the engine's waits yield it): the state is
/// the task's own and stays put meanwhile. Never inlined: a migratable task resumed
/// on another worker must not reuse a thread-local address computed before.
#[inline(never)]
pub(crate) fn with<R>(body: impl FnOnce(&Locals) -> R) -> Option<R> {
    let locals = THREAD
        .try_with(|thread| {
            // Plain threads (the common case without the scheduler) never ask it.
            if thread.is_worker() {
                lutra_sched::task_local(Locals::new)
            } else {
                Some(NonNull::from(&thread.locals))
            }
        })
        .ok()??;
    // SAFETY: a plain thread's own `Locals` live until the thread exits, after this
    // call; a task's (from `task_local`) live until the task finishes, and only the
    // task uses them. Either way no other thread touches them meanwhile.
    Some(body(unsafe { locals.as_ref() }))
}

/// Whether the calling thread is a plain thread (not a worker of the scheduler): its
/// state may then be published to the fast path (`fast.rs`). `false` while the
/// thread is being torn down.
pub(crate) fn is_plain_thread() -> bool {
    THREAD
        .try_with(|thread| !thread.is_worker())
        .unwrap_or(false)
}
