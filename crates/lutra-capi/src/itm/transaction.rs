//! How an ABI transaction begins and ends: the body of `_ITM_beginTransaction`
//! (called by its assembly, `checkpoint.rs`), `_ITM_commitTransaction`,
//! `_ITM_abortTransaction` (a cancel) and `_ITM_changeTransactionMode` (serial,
//! irrevocable).
//!
//! # Invariants
//! - Every function reaches the thread's state through `on_thread` and jumps (a
//!   restart, a cancel) only once that access has ended.
//! - User code (commit and undo actions) runs only outside that access.
//! - `ItmFrame::active` is set by an outermost begin and cleared by its commit or
//!   cancel (or by `ItmFrame::abandon`); nested levels only count `nesting`.

use super::library::fatal;
use super::retry_callers;
use super::thread_state::on_thread;
use super::{
    A_RUN_INSTRUMENTED_CODE, A_RUN_UNINSTRUMENTED_CODE, A_SAVE_LIVE_VARIABLES, Checkpoint,
    NO_TRANSACTION_ID, PR_HAS_NO_ABORT, PR_INSTRUMENTED_CODE, PR_UNINSTRUMENTED_CODE, Resumption,
    make_serial,
};
use crate::attempt::Style;
use crate::engine;
use crate::fast;
use crate::lifecycle;
use crate::shim;
use crate::status::{LUTRA_OK, STM_ABORT_EXPLICIT, Site};
use crate::thread::{self, Attributes, ThreadTx};
use lutra_stm::AbortReason;
use std::ffi::{c_int, c_void};

/// `_ITM_abortReason`: the program cancelled the transaction.
const USER_ABORT: u32 = 1;
/// `_ITM_abortReason`: cancel the outermost transaction (`__transaction_cancel
/// [[outer]]`).
const OUTER_ABORT: u32 = 16;

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
    if frame.id == 0 {
        // The thread's first transaction: an object loaded since the last look may
        // call `stm_retry`. Before the attempt begins (see `retry_callers.rs`).
        retry_callers::refresh();
    }
    frame.checkpoint = *checkpoint;
    frame.active = true;
    frame.uninstrumented_only = uninstrumented_only;
    frame.id = frame.id.max(NO_TRANSACTION_ID) + 1;
    if uninstrumented_only {
        // Starting irrevocable, the attempt waits for the commit gate instead of
        // failing, so it becomes serial without restarting.
        state.start_next_irrevocable();
    }
    // As `stm_start`: the straight begin when the last transaction left nothing
    // behind (never after `start_next_irrevocable`), else the general one. GCC's
    // `pr_readOnly` is not taken as the read-only hint (`gnu-tm.md`).
    if state.in_task || !state.try_begin_plain(0) {
        state.begin(Attributes::default());
    }
    if uninstrumented_only
        || (runs_uninstrumented_alone(properties)
            && state.desc.is_solo()
            && !retry_callers::possible())
    {
        state.itm.uninstrumented_only = true;
        make_serial(state);
        return Ok(A_RUN_UNINSTRUMENTED_CODE | A_SAVE_LIVE_VARIABLES);
    }
    Ok(A_RUN_INSTRUMENTED_CODE | A_SAVE_LIVE_VARIABLES)
}

/// Whether a transaction with `properties` may run its uninstrumented path when its
/// thread is alone with the engine: GCC compiled that path, and the transaction
/// never cancels (a serial attempt cannot be rolled back). The caller also asks
/// whether the program can call `stm_retry` (`retry_callers.rs`).
fn runs_uninstrumented_alone(properties: u32) -> bool {
    let both_paths = PR_INSTRUMENTED_CODE | PR_UNINSTRUMENTED_CODE;
    properties & both_paths == both_paths && properties & PR_HAS_NO_ABORT != 0
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
        1 => {
            // As `stm_commit`: the straight commit inline (a read-only or solo
            // attempt, a serial solo one too), then through one call, then the
            // general one.
            if !state.try_commit_plain(false) && !state.try_commit_plain(true) {
                state.commit_outermost()?;
            }
            let frame = &mut state.itm;
            frame.active = false;
            frame.clear();
            Ok(if frame.commit_actions.is_empty() {
                Vec::new()
            } else {
                std::mem::take(&mut frame.commit_actions)
            })
        }
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
