//! Transactions of the ABI: begin (called by `_ITM_beginTransaction`'s assembly),
//! `_ITM_commitTransaction`, `_ITM_abortTransaction`, `_ITM_changeTransactionMode`,
//! the queries (`_ITM_inTransaction`, `_ITM_getTransactionId`), user actions, and
//! the library's identity (`_ITM_versionCompatible`, `_ITM_libraryVersion`,
//! `_ITM_error`).
//!
//! # Invariants
//! - Every function reaches the thread's state through `on_thread` and jumps (a
//!   restart, a cancel) only once that access has ended.
//! - User code (commit and undo actions) runs only outside that access.

use super::{
    A_RUN_INSTRUMENTED_CODE, A_RUN_UNINSTRUMENTED_CODE, A_SAVE_LIVE_VARIABLES, Checkpoint,
    PR_INSTRUMENTED_CODE, Resumption, UserAction, make_serial,
};
use crate::attempt::Style;
use crate::engine;
use crate::fast;
use crate::lifecycle;
use crate::shim;
use crate::status::{LUTRA_OK, STM_ABORT_EXPLICIT, Site};
use crate::thread::{self, Attributes, ThreadTx, with_thread};
use lutra_stm::AbortReason;
use std::ffi::{CStr, c_char, c_int, c_void};

/// `_ITM_abortReason`: the program cancelled the transaction.
const USER_ABORT: u32 = 1;
/// `_ITM_abortReason`: cancel the outermost transaction (`__transaction_cancel
/// [[outer]]`).
const OUTER_ABORT: u32 = 16;
/// `_ITM_noTransactionId`: the id outside transactions.
const NO_TRANSACTION_ID: u64 = 1;
/// `_ITM_VERSION_NO`: the ABI version this library implements.
const VERSION_NO: c_int = 100;

/// Stops the process: the ABI was used in a way it cannot honour (a bug in the
/// program, or a feature Lutra lacks), named by `function` and `message`.
#[cold]
#[inline(never)]
pub(super) fn fatal(function: &str, message: &str) -> ! {
    eprintln!("lutra: {function}: {message}");
    std::process::abort()
}

/// Runs `body` on the calling thread's registered state: the fast-path slot of a
/// plain thread, else the general path (a task's state). A thread that is not
/// registered has no transaction, and a signal handler that interrupted the
/// thread's transaction cannot reach it (`signals.rs`): misuse of the ABI, which
/// stops the process with a message.
#[inline(always)]
pub(super) fn on_thread<R>(function: &str, body: impl FnOnce(&mut ThreadTx) -> R) -> R {
    // SAFETY: entered from C; the reference ends with this call, before any jump.
    match unsafe { fast::state() } {
        Some(state) => body(state),
        None => on_thread_slow(function, body),
    }
}

#[cold]
#[inline(never)]
fn on_thread_slow<R>(function: &str, body: impl FnOnce(&mut ThreadTx) -> R) -> R {
    with_thread(|state| Ok(body(state))).unwrap_or_else(|error| {
        if crate::signals::hidden() {
            // A transaction in a signal handler that interrupted one of this thread:
            // libitm has no error to return.
            fatal(function, &error.message)
        }
        fatal(function, "called outside any transaction of this thread")
    })
}

/// Registers the calling thread (starting the engine first, as `stm_init` does, if
/// nothing started it).
#[cold]
#[inline(never)]
fn register_slow() {
    if !engine::is_running() {
        lifecycle::stm_init();
    }
    if let Err(error) = thread::register() {
        fatal("_ITM_beginTransaction", &error.message);
    }
}

/// The body of `_ITM_beginTransaction`, called by its assembly with the
/// checkpoint it saved: the actions to return.
///
/// # Safety
/// `checkpoint` is readable; called from `_ITM_beginTransaction` only.
pub(super) unsafe extern "C" fn begin(properties: u32, checkpoint: *const Checkpoint) -> u32 {
    // SAFETY: only asks whether the slot is set; no reference is kept.
    if unsafe { fast::state() }.is_none() && !thread::is_registered() {
        register_slow();
    }
    let status = on_thread("_ITM_beginTransaction", |state| {
        // SAFETY: the caller's contract.
        begin_on(state, properties, unsafe { &*checkpoint })
    });
    match status {
        Ok(actions) => actions,
        Err(status) => {
            // SAFETY: this frame and the assembly's own nothing; the outer
            // transaction's checkpoint frame is live.
            unsafe { shim::jump_if_restarted(status) };
            fatal(
                "_ITM_beginTransaction",
                "a transaction ended while beginning",
            )
        }
    }
}

/// Begins or joins a transaction on `state`: the actions, or the status of the
/// abort path when the running attempt must restart first.
fn begin_on(state: &mut ThreadTx, properties: u32, checkpoint: &Checkpoint) -> Result<u32, c_int> {
    let uninstrumented_only = properties & PR_INSTRUMENTED_CODE == 0;
    if state.nesting > 0 {
        state.nesting += 1;
        if !uninstrumented_only {
            return Ok(A_RUN_INSTRUMENTED_CODE);
        }
        // Code without barriers inside a running transaction: it turns serial.
        return match state.desc.become_serial() {
            Ok(()) => Ok(A_RUN_UNINSTRUMENTED_CODE),
            Err(abort) => Err(state.after_abort(abort.reason(), Site::Commit, Style::Restart)),
        };
    }
    let frame = &mut state.itm;
    frame.checkpoint = *checkpoint;
    frame.active = true;
    frame.uninstrumented_only = uninstrumented_only;
    frame.id = frame.id.max(NO_TRANSACTION_ID) + 1;
    if uninstrumented_only {
        // Starting irrevocable, the attempt waits for the commit gate instead of
        // failing, so it becomes serial without restarting.
        state.start_next_irrevocable();
    }
    state.begin(Attributes::default());
    if uninstrumented_only {
        make_serial(state);
        return Ok(A_RUN_UNINSTRUMENTED_CODE | A_SAVE_LIVE_VARIABLES);
    }
    Ok(A_RUN_INSTRUMENTED_CODE | A_SAVE_LIVE_VARIABLES)
}

/// libitm's `_ITM_commitTransaction`: commits the calling thread's transaction (or
/// closes one nested level), then runs the commit actions the transaction
/// registered. If the commit fails, the transaction restarts: this call does not
/// return, and `_ITM_beginTransaction` returns again. Called outside a transaction,
/// it stops the process with a message.
///
/// # Safety
/// Called by code that GCC compiled with `-fgnu-tm`, at the end of a transaction.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ITM_commitTransaction() {
    let outcome = on_thread("_ITM_commitTransaction", |state| match state.nesting {
        0 => fatal("_ITM_commitTransaction", "no transaction is running"),
        1 => match state.commit_outermost() {
            Ok(()) => {
                let frame = &mut state.itm;
                frame.active = false;
                frame.clear();
                Ok(std::mem::take(&mut frame.commit_actions))
            }
            Err(status) => Err(status),
        },
        _ => {
            state.nesting -= 1;
            Ok(Vec::new())
        }
    });
    match outcome {
        Ok(actions) => {
            for (action, arg) in actions {
                // SAFETY: the program registered `action` for `arg`, to be called
                // once the transaction has committed.
                unsafe { action(arg as *mut c_void) };
            }
        }
        // SAFETY: this frame owns only the status.
        Err(status) => unsafe { shim::jump_if_restarted(status) },
    }
}

/// libitm's `_ITM_abortTransaction`: `__transaction_cancel`. Rolls the
/// transaction back (its writes, allocations and `_ITM_L*`-logged words), runs its
/// undo actions, and makes `_ITM_beginTransaction` return again with
/// `a_abortTransaction`, so that execution continues after the transaction. Nesting
/// is flat: cancelling an inner transaction alone (without `[[outer]]`) stops the
/// process with a message, as does a call outside a transaction begun through this
/// ABI.
///
/// # Safety
/// Called by code that GCC compiled with `-fgnu-tm`, inside a transaction.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ITM_abortTransaction(reason: u32) -> ! {
    let function = "_ITM_abortTransaction";
    let resumption = on_thread(function, |state| {
        if state.nesting == 0 || !state.itm.active {
            fatal(
                function,
                "no transaction begun by _ITM_beginTransaction is running",
            );
        }
        if reason & USER_ABORT == 0 {
            fatal(
                function,
                "only user aborts (__transaction_cancel) are supported",
            );
        }
        if state.nesting > 1 && reason & OUTER_ABORT == 0 {
            fatal(
                function,
                "cancelling an inner transaction alone is not supported (Lutra's nesting \
                 is flat): use __transaction_cancel [[outer]], or cancel the outermost one",
            );
        }
        state.end_attempt(AbortReason::Explicit, STM_ABORT_EXPLICIT, true);
        Resumption::prepare(state, false)
    });
    // SAFETY: the access to the state has ended; only GCC's frames and this one
    // (owning nothing once `run` has the resumption) lie above the checkpoint.
    unsafe { resumption.run() }
}

/// libitm's `_ITM_changeTransactionMode(modeSerialIrrevocable)`: makes the calling
/// thread's transaction serial and irrevocable (`TxDescriptor::become_serial`), as
/// GCC asks before an unsafe call in `__transaction_relaxed`. If something it read
/// has changed, the transaction restarts (this call does not return) and asks again.
///
/// # Safety
/// Called by code that GCC compiled with `-fgnu-tm`, inside a transaction.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ITM_changeTransactionMode(mode: c_int) {
    let _ = mode; // the ABI's only mode: serial irrevocable.
    let status = on_thread("_ITM_changeTransactionMode", become_serial);
    // SAFETY: this frame owns only the status.
    unsafe { shim::jump_if_restarted(status) };
}

/// Makes the transaction on `state` serial: `LUTRA_OK`, or the abort path's status.
pub(super) fn become_serial(state: &mut ThreadTx) -> c_int {
    if state.nesting == 0 {
        fatal("_ITM_changeTransactionMode", "no transaction is running");
    }
    match state.desc.become_serial() {
        Ok(()) => LUTRA_OK,
        Err(abort) => state.after_abort(abort.reason(), Site::Commit, Style::Restart),
    }
}

/// libitm's `_ITM_inTransaction`: 0 outside transactions, 2 inside an irrevocable
/// one, 1 inside any other. May be called at any time.
#[unsafe(no_mangle)]
pub extern "C" fn _ITM_inTransaction() -> c_int {
    with_thread(|state| {
        Ok(match state.nesting {
            0 => 0,
            _ if state.desc.is_irrevocable() => 2,
            _ => 1,
        })
    })
    .unwrap_or(0)
}

/// libitm's `_ITM_getTransactionId`: the id of the calling thread's running
/// transaction (2 or more), or 1 (`_ITM_noTransactionId`) outside transactions. Ids
/// are unique per thread. May be called at any time.
#[unsafe(no_mangle)]
pub extern "C" fn _ITM_getTransactionId() -> u64 {
    with_thread(|state| {
        Ok(if state.nesting > 0 {
            state.itm.id.max(NO_TRANSACTION_ID + 1)
        } else {
            NO_TRANSACTION_ID
        })
    })
    .unwrap_or(NO_TRANSACTION_ID)
}

/// libitm's `_ITM_addUserCommitAction`: calls `action(arg)` after the calling
/// thread's transaction commits (never if it rolls back). `resuming_id` is ignored
/// (Lutra's nesting is flat). Outside a transaction it stops the process.
///
/// # Safety
/// `action` must be safe to call with `arg` after the commit.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ITM_addUserCommitAction(
    action: UserAction,
    resuming_id: u64,
    arg: *mut c_void,
) {
    let _ = resuming_id;
    add_action("_ITM_addUserCommitAction", |state| {
        state.itm.commit_actions.push((action, arg as usize));
    });
}

/// libitm's `_ITM_addUserUndoAction`: calls `action(arg)` if the calling thread's
/// transaction rolls back (a restart or a cancel), newest first. Outside a
/// transaction it stops the process.
///
/// # Safety
/// `action` must be safe to call with `arg` when the transaction rolls back.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ITM_addUserUndoAction(action: UserAction, arg: *mut c_void) {
    add_action("_ITM_addUserUndoAction", |state| {
        state.itm.undo_actions.push((action, arg as usize));
    });
}

fn add_action(function: &str, push: impl FnOnce(&mut ThreadTx)) {
    on_thread(function, |state| {
        if state.nesting == 0 {
            fatal(function, "no transaction is running");
        }
        push(state);
    });
}

/// libitm's `_ITM_dropReferences`: a hint that a range is no longer shared; Lutra
/// needs none, so this does nothing. May be called at any time.
#[unsafe(no_mangle)]
pub extern "C" fn _ITM_dropReferences(start: *const c_void, size: usize) {
    let _ = (start, size);
}

/// libitm's `_ITM_versionCompatible`: 1 if this library implements ABI version
/// `version` (100), 0 otherwise.
#[unsafe(no_mangle)]
pub extern "C" fn _ITM_versionCompatible(version: c_int) -> c_int {
    c_int::from(version == VERSION_NO)
}

/// libitm's `_ITM_libraryVersion`: a static string naming this library.
#[unsafe(no_mangle)]
pub extern "C" fn _ITM_libraryVersion() -> *const c_char {
    const VERSION: &CStr = c"Lutra (libitm ABI 1.0)";
    VERSION.as_ptr()
}

/// libitm's `_ITM_srcLocation`: where `_ITM_error` was called from.
#[repr(C)]
pub struct SrcLocation {
    reserved_1: i32,
    flags: i32,
    reserved_2: i32,
    reserved_3: i32,
    source: *const c_char,
}

/// libitm's `_ITM_error`: an unrecoverable error reported by the program's
/// transactional code; prints it (with its source location if known) and stops
/// the process.
///
/// # Safety
/// `location` must be NULL or point to a location whose `source` is NULL or a
/// NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ITM_error(location: *const SrcLocation, code: c_int) -> ! {
    // SAFETY: the caller's contract.
    let source = unsafe { location.as_ref() }
        .filter(|location| !location.source.is_null())
        // SAFETY: a NUL-terminated string (contract).
        .map(|location| unsafe { CStr::from_ptr(location.source) }.to_string_lossy());
    let at = source
        .map(|source| format!(" at {source}"))
        .unwrap_or_default();
    fatal("_ITM_error", &format!("error {code}{at}"))
}
