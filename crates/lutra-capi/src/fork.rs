//! `fork()` in a program whose threads are registered: the child has only the
//! forking thread, and the engine's state still names the others — their running
//! attempts hold ownership records that nobody will release, and locks of the
//! library may be held by threads that do not exist in the child (a transaction
//! of the child waited forever). Handlers installed with `pthread_atfork` (once,
//! when the first engine starts) give the child a fresh engine of the same
//! configuration and re-register the forking thread if it was registered.
//!
//! # Protocol
//! 1. Before the fork (in the forking thread): take the library's process-wide
//!    locks — the engine's, the threads' counts, the pending frees' shards — so
//!    that none is held by another thread when the process is copied.
//! 2. In the parent: release them.
//! 3. In the child: replace the engine (the old one is leaked), mark a scheduler
//!    that ran as lost (its workers are threads of the parent: `sched.h` calls
//!    then report `LUTRA_ENOINIT`), forget the pending frees, drop the forking
//!    thread's state without touching the old engine (also leaked), release the
//!    locks, and register the thread again if it was.
//!
//! # Invariants
//! - The locks are taken and released by the forking thread only; no lock of the
//!   library is taken while another is held in the order above reversed.
//! - What the child sees in memory is what the parent had: transactions of other
//!   threads that were running are gone with their threads (their writes were
//!   buffered, never in memory), except a commit caught in the middle of writing
//!   back, or a solo attempt's direct writes, which the child keeps as they were.

use crate::engine;
use crate::fast;
use crate::locals;
use crate::pending_free;
use crate::scheduler;
use crate::stats;
use crate::thread;
use std::cell::RefCell;
use std::sync::Once;

/// The locks held from the prepare handler to the parent's or child's.
struct Held {
    engine: std::sync::RwLockWriteGuard<'static, Option<lutra_stm::Stm>>,
    /// Held only.
    _tallies: std::sync::MutexGuard<'static, stats::Tallies>,
    pending: Vec<std::sync::MutexGuard<'static, pending_free::Shard>>,
}

thread_local! {
    static HELD: RefCell<Option<(Held, bool)>> = const { RefCell::new(None) };
}

/// Installs the handlers (once per process).
pub(crate) fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // SAFETY: registers three functions of the right signature, which live as
        // long as the library.
        let rc = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
        if rc != 0 {
            eprintln!("lutra: pthread_atfork failed ({rc}): a fork()ed child cannot use the STM");
        }
    });
}

/// Step 1.
extern "C" fn prepare() {
    let registered = thread::is_registered();
    let engine = engine::hold_for_fork();
    let tallies = stats::hold_for_fork();
    let pending = pending_free::hold_for_fork();
    let held = Held {
        engine,
        _tallies: tallies,
        pending,
    };
    let _ = HELD.try_with(|cell| *cell.borrow_mut() = Some((held, registered)));
}

/// Step 2.
extern "C" fn parent() {
    let held = HELD
        .try_with(|cell| cell.borrow_mut().take())
        .ok()
        .flatten();
    drop(held);
}

/// Step 3.
extern "C" fn child() {
    let Some((mut held, registered)) = HELD
        .try_with(|cell| cell.borrow_mut().take())
        .ok()
        .flatten()
    else {
        return;
    };
    engine::renew_after_fork(&mut held.engine);
    scheduler::forget_after_fork();
    pending_free::forget_after_fork(&mut held.pending);
    forget_thread_state();
    drop(held);
    if registered && let Err(error) = thread::register() {
        eprintln!(
            "lutra: fork: the child's thread could not register again: {}",
            error.message
        );
    }
}

/// Drops the calling thread's state in the child without running its destructor
/// (which would roll back an attempt of the old engine and unregister it).
fn forget_thread_state() {
    let state = locals::with(|locals| locals.tx.try_borrow_mut().ok().and_then(|mut tx| tx.take()))
        .flatten();
    if let Some(state) = state {
        // SAFETY: the thread's own state, not borrowed (the fork happened outside
        // every call of the library on this thread); the slot must not point to a
        // state that is forgotten.
        unsafe { fast::withdraw(state.as_ptr()) };
        std::mem::forget(state);
    }
}
