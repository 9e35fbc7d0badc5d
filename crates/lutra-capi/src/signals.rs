//! Signal handlers that interrupt a transaction of their own thread. The interrupted
//! attempt may be in the middle of a library call (its read or write set half
//! updated), so a transaction in the handler can neither join it (flat nesting) nor
//! run beside it on the same descriptor: while such a handler runs, every call of
//! the thread's `stm.h` state reports `LUTRA_EINTX` ("in a signal handler that
//! interrupted a transaction of this thread"), and the interrupted transaction goes
//! on untouched once the handler returns. A handler that interrupted no transaction
//! runs transactions as any code does.
//!
//! The library interposes `sigaction` and `signal`: a handler the program installs
//! is registered under a trampoline of the library's, which hides the thread's state
//! (`fast::hide`: the fast-path slot, read front and inline undo window closed, and
//! [`hidden`] true for the general path) around the call when the thread runs a
//! transaction, and passes the signal, its information and its context through
//! unchanged. `sigaction`'s old action reports the program's handler, never the
//! trampoline.
//!
//! `liblutra.so` (and a program linked with `liblutra.a`) interposes them; Lutra's
//! `libitm.so.1` does not export them (see `itm.map`), so `-fgnu-tm` programs keep
//! the C library's.
//!
//! # Invariants
//! - `HANDLERS[signal]` is the program's handler for `signal` while the trampoline
//!   is installed for it (0 otherwise); `SIGINFO[signal]` says whether it takes
//!   three arguments.
//! - The trampoline only reads atomics and thread-local cells and writes the
//!   thread's own variables: it is async-signal-safe.
//! - Plain threads only: a task's state is never in the fast-path slot, and a task
//!   interrupted by a signal keeps the general path's protection (a state borrowed
//!   by the interrupted call reports "re-entered from inside the library").

use crate::fast;
use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Signal numbers covered (Linux's `_NSIG`).
const SIGNALS: usize = 65;

static HANDLERS: [AtomicUsize; SIGNALS] = [const { AtomicUsize::new(0) }; SIGNALS];
static SIGINFO: [AtomicBool; SIGNALS] = [const { AtomicBool::new(false) }; SIGNALS];

thread_local! {
    /// The thread's state is hidden: a handler runs that interrupted its transaction.
    static HIDDEN: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread runs a signal handler that interrupted its
/// transaction (the state is then out of reach: see the module).
pub(crate) fn hidden() -> bool {
    HIDDEN.try_with(Cell::get).unwrap_or(false)
}

/// The library's handler for every signal the program handles.
extern "C" fn trampoline(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let Some(index) = usize::try_from(signal).ok().filter(|&i| i < SIGNALS) else {
        return;
    };
    // ORDERING: pairs with the release store in `sigaction`: the handler's address
    // is published before the trampoline is installed for it.
    let handler = HANDLERS[index].load(Ordering::Acquire);
    if handler == 0 {
        return;
    }
    // SAFETY: at a handler's entry, on the interrupted thread; undone below before
    // the handler returns.
    let hidden = unsafe { fast::hide() };
    let was_hidden = hidden.is_some() && !HIDDEN.with(|cell| cell.replace(true));
    if SIGINFO[index].load(Ordering::Relaxed) {
        // SAFETY: the program installed this three-argument handler for `signal`.
        let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
            unsafe { std::mem::transmute(handler) };
        handler(signal, info, context);
    } else {
        // SAFETY: the program installed this one-argument handler for `signal`.
        let handler: extern "C" fn(c_int) = unsafe { std::mem::transmute(handler) };
        handler(signal);
    }
    if was_hidden {
        HIDDEN.with(|cell| cell.set(false));
    }
    if let Some(hidden) = hidden {
        // SAFETY: taken by `fast::hide` at this handler's entry.
        unsafe { fast::unhide(hidden) };
    }
}

/// The C library's `sigaction`.
fn next_sigaction()
-> unsafe extern "C" fn(c_int, *const libc::sigaction, *mut libc::sigaction) -> c_int {
    let function = crate::interpose::next(c"sigaction");
    // SAFETY: the C library's `sigaction`, of this very signature.
    unsafe { std::mem::transmute(function) }
}

/// Whether `handler` is a function (not `SIG_DFL`, `SIG_IGN` or `SIG_ERR`).
fn is_function(handler: usize) -> bool {
    handler != libc::SIG_DFL && handler != libc::SIG_IGN && handler != libc::SIG_ERR
}

/// POSIX's `sigaction`, interposed: installs the program's handler under the
/// library's trampoline (see the module); the old action names the program's
/// handler. Returns as the C library's.
///
/// # Safety
/// As the C library's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigaction(
    signal: c_int,
    action: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    let next = next_sigaction();
    let Some(index) = usize::try_from(signal)
        .ok()
        .filter(|&i| i > 0 && i < SIGNALS)
    else {
        // SAFETY: forwarded as given (the C library reports the bad signal).
        return unsafe { next(signal, action, old) };
    };
    let before = (
        HANDLERS[index].load(Ordering::Acquire),
        SIGINFO[index].load(Ordering::Relaxed),
    );
    let rc = if action.is_null() {
        // SAFETY: forwarded as given.
        unsafe { next(signal, action, old) }
    } else {
        // SAFETY: `action` is readable (the caller's contract).
        let mut wrapped = unsafe { *action };
        let handler = wrapped.sa_sigaction;
        if is_function(handler) {
            SIGINFO[index].store(wrapped.sa_flags & libc::SA_SIGINFO != 0, Ordering::Relaxed);
            // ORDERING: pairs with the trampoline's acquire load.
            HANDLERS[index].store(handler, Ordering::Release);
            wrapped.sa_sigaction = trampoline as *const () as usize;
            wrapped.sa_flags |= libc::SA_SIGINFO;
        }
        // SAFETY: forwarded, with the trampoline in place of a function.
        let rc = unsafe { next(signal, &wrapped, old) };
        if rc != 0 {
            HANDLERS[index].store(before.0, Ordering::Release);
            SIGINFO[index].store(before.1, Ordering::Relaxed);
        } else if !is_function(handler) {
            HANDLERS[index].store(0, Ordering::Release);
        }
        rc
    };
    if rc == 0 && !old.is_null() {
        // SAFETY: `old` was filled by the C library (the caller's contract).
        let old = unsafe { &mut *old };
        if old.sa_sigaction == trampoline as *const () as usize {
            old.sa_sigaction = before.0;
            if !before.1 {
                old.sa_flags &= !libc::SA_SIGINFO;
            }
        }
    }
    rc
}

/// The C library's `signal` (BSD semantics, as glibc's: the signal is blocked while
/// its handler runs, interrupted calls restart), through the interposed
/// [`sigaction`]. Returns the previous handler, or `SIG_ERR`.
///
/// # Safety
/// As the C library's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn signal(signal: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    // SAFETY: a zeroed `sigaction` is valid; it is filled below.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = handler;
    action.sa_flags = libc::SA_RESTART;
    // SAFETY: `action.sa_mask` is a valid signal set.
    unsafe {
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaddset(&mut action.sa_mask, signal);
    }
    // SAFETY: a zeroed `sigaction` is valid as the output.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: both actions are valid.
    if unsafe { sigaction(signal, &action, &mut old) } != 0 {
        return libc::SIG_ERR;
    }
    old.sa_sigaction
}
