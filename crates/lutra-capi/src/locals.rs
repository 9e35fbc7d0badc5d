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

/// Runs `body` with the calling task's state, or the calling thread's outside tasks
/// (late ones while the thread is torn down: see [`late`]). `None` only when
/// neither can be had.
///
/// In a task, `body` may suspend the task (the engine's waits yield it): the state is
/// the task's own and stays put meanwhile. Never inlined: a migratable task resumed
/// on another worker must not reuse a thread-local address computed before.
#[inline(never)]
pub(crate) fn with<R>(body: impl FnOnce(&Locals) -> R) -> Option<R> {
    let found = THREAD.try_with(|thread| {
        // Plain threads (the common case without the scheduler) never ask it.
        if thread.is_worker() {
            lutra_sched::task_local(Locals::new)
        } else {
            Some(NonNull::from(&thread.locals))
        }
    });
    let locals = match found {
        Ok(locals) => locals?,
        // The thread is exiting and its Rust thread-locals are gone: C code still
        // running (a `pthread_key_create` destructor) gets late ones.
        Err(_) => late::locals()?,
    };
    // SAFETY: a plain thread's own `Locals` live until the thread exits, after this
    // call; a task's (from `task_local`) live until the task finishes, and only the
    // task uses them; late ones until the thread's key destructors end (`late`).
    // Either way no other thread touches them meanwhile.
    Some(body(unsafe { locals.as_ref() }))
}

/// The [`Locals`] of a thread whose Rust thread-locals have been destroyed: the C
/// library runs the destructors of `pthread_key_create` keys after them, and such a
/// destructor may still run transactions (GCC's libitm allows it).
///
/// # Invariants
/// - `LATE` holds no destructor of its own (a `Cell` of a pointer), so it stays
///   readable while the thread is torn down; it is NULL or the thread's late
///   `Locals`, boxed.
/// - The box is dropped by the destructor of `KEY`, whose value is set to the box
///   when it is made: the C library calls it in its next round of key destructors
///   (after the destructor that needed it has returned), on the same thread.
mod late {
    use super::Locals;
    use std::cell::Cell;
    use std::ffi::{c_int, c_uint, c_void};
    use std::ptr::NonNull;
    use std::sync::OnceLock;

    unsafe extern "C" {
        fn pthread_key_create(
            key: *mut c_uint,
            destructor: Option<unsafe extern "C" fn(*mut c_void)>,
        ) -> c_int;
        fn pthread_setspecific(key: c_uint, value: *const c_void) -> c_int;
    }

    thread_local! {
        static LATE: Cell<*mut Locals> = const { Cell::new(std::ptr::null_mut()) };
    }

    /// The key whose destructor drops a thread's late `Locals` (`None` if the C
    /// library had no key left).
    fn key() -> Option<c_uint> {
        static KEY: OnceLock<Option<c_uint>> = OnceLock::new();
        *KEY.get_or_init(|| {
            let mut key: c_uint = 0;
            // SAFETY: `key` is writable; `release` has the destructor's signature.
            (unsafe { pthread_key_create(&mut key, Some(release)) } == 0).then_some(key)
        })
    }

    /// Drops the calling thread's late `Locals` (rolling back and unregistering
    /// whatever it holds).
    unsafe extern "C" fn release(value: *mut c_void) {
        let _ = LATE.try_with(|late| late.set(std::ptr::null_mut()));
        // SAFETY: `value` is the box made by `locals` on this thread, given to the
        // key once and dropped once, here.
        drop(unsafe { Box::from_raw(value.cast::<Locals>()) });
    }

    /// The calling thread's late `Locals`, made on first use; `None` if they cannot
    /// be released (no key).
    pub(super) fn locals() -> Option<NonNull<Locals>> {
        let existing = LATE.try_with(Cell::get).ok()?;
        if let Some(locals) = NonNull::new(existing) {
            return Some(locals);
        }
        let key = key()?;
        let fresh = Box::into_raw(Box::new(Locals::new()));
        // SAFETY: `fresh` lives until `release` drops it.
        if unsafe { pthread_setspecific(key, fresh.cast()) } != 0 {
            // SAFETY: not given to the key: still ours alone.
            drop(unsafe { Box::from_raw(fresh) });
            return None;
        }
        LATE.try_with(|late| late.set(fresh)).ok()?;
        NonNull::new(fresh)
    }
}

/// Whether the calling thread is a plain thread (not a worker of the scheduler): its
/// state may then be published to the fast path (`fast.rs`). `false` while the
/// thread is being torn down.
pub(crate) fn is_plain_thread() -> bool {
    THREAD
        .try_with(|thread| !thread.is_worker())
        .unwrap_or(false)
}
