//! Lutra's jump-free entry point: `stm_atomically(fn, arg)` runs `fn(arg)` as a
//! transaction until it commits; the caller writes no `sigsetjmp`.
//!
//! # Protocol
//! 1. The shim begins the transaction (`lutra_capi_begin`). Nested inside another
//!    transaction, it runs `fn` once and hands the result to [`lutra_capi_settle_nested`].
//! 2. Outermost, the shim fills the thread's jump buffer with `sigsetjmp` in its own
//!    frame (tinySTM accessors called by `fn` jump back there, over C frames only),
//!    then calls `fn(arg)` and hands its result to [`lutra_capi_settle`]:
//!    - the attempt is doomed (a status-style accessor reported an abort): roll back,
//!      restart, run `fn` again;
//!    - `fn` returned non-zero: roll back, do not retry, return that value;
//!    - otherwise commit; if the commit fails, restart and run `fn` again.
//! 3. With the `no_retry` attribute (or `stm_abort(STM_ABORT_NO_RETRY)`), an abort
//!    ends the transaction and `stm_atomically` returns `LUTRA_EABORTED`, whatever
//!    `fn` returned.
//!
//! # Invariants
//! - While `fn` runs in an outermost `stm_atomically`, the thread's jump buffer was
//!   filled in the shim's frame, which outlives every jump `fn` can cause.
//! - When `stm_atomically` returns, the transaction it started is over (committed or
//!   rolled back): nothing of a cancelled `fn` stays visible.

use crate::boundary;
use crate::fast;
use crate::last_error;
use crate::shim::{self, StmAtomicFn};
use crate::status::{
    CapiError, CapiResult, LUTRA_EABORTED, LUTRA_OK, STM_ABORT_EXPLICIT, STM_PATH_INSTRUMENTED,
    Site, abort_code,
};
use crate::thread::{ThreadTx, with_thread};
use crate::txn::StmTxAttr;
use lutra_stm::AbortReason;
use std::ffi::{c_int, c_void};

/// What to do after `fn` returned.
enum Next {
    /// A new attempt runs: call `fn` again.
    Again,
    /// The transaction is over: return this.
    Done(c_int),
}

/// What `stm_atomically` returns for a transaction that `fn` (or an abort inside it)
/// ended: `LUTRA_EABORTED` after an abort that was not retried, whatever `fn`
/// returned; a misuse error if `fn` committed it itself.
fn ended(state: &ThreadTx) -> CapiResult<c_int> {
    if state.ended_by_abort {
        Ok(LUTRA_EABORTED)
    } else {
        Err(CapiError::invalid(
            "the function committed or ended the transaction itself",
        ))
    }
}

/// The abort path's status, as what to do next.
fn after_restart(state: &ThreadTx, status: c_int) -> CapiResult<Next> {
    if status & STM_PATH_INSTRUMENTED != 0 {
        Ok(Next::Again)
    } else {
        ended(state).map(Next::Done)
    }
}

/// Step 2 of the protocol, after `fn` returned `rc` in the outermost transaction.
fn settle(state: &mut ThreadTx, rc: c_int) -> CapiResult<Next> {
    if state.nesting == 0 {
        return ended(state).map(Next::Done);
    }
    if let Some(reason) = state.desc.doomed() {
        let code = state.pending.unwrap_or(abort_code(reason, Site::Commit));
        let status = state.end_attempt(reason, code, false);
        return after_restart(state, status);
    }
    if state.nesting > 1 {
        state.end_attempt(AbortReason::Explicit, STM_ABORT_EXPLICIT, true);
        return Err(CapiError::invalid(
            "the function left a nested stm_start without its stm_commit",
        ));
    }
    if rc != 0 {
        state.end_attempt(AbortReason::Explicit, STM_ABORT_EXPLICIT, true);
        return Ok(Next::Done(rc));
    }
    match state.commit_outermost() {
        Ok(()) => Ok(Next::Done(LUTRA_OK)),
        Err(status) => after_restart(state, status),
    }
}

/// Called by the shim after `fn` returned `rc` in an outermost `stm_atomically`.
/// Returns 1 when a new attempt runs (call `fn` again), 0 when done (the result is in
/// `*result`), or a negative error.
///
/// Internal to the library (used by `c/shim.c`).
///
/// # Safety
/// `result` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lutra_capi_settle(rc: c_int, result: *mut c_int) -> c_int {
    // SAFETY: entered from C (the shim); the reference ends with this call.
    if let Some(state) = unsafe { fast::state() } {
        return match settle(state, rc) {
            Ok(Next::Again) => 1,
            Ok(Next::Done(value)) => {
                // SAFETY: `result` is writable (contract).
                unsafe { result.write(value) };
                0
            }
            Err(error) => settle_error_slow(&error),
        };
    }
    boundary::status("stm_atomically", || {
        match with_thread(|state| settle(state, rc))? {
            Next::Again => Ok(1),
            Next::Done(value) => {
                // SAFETY: `result` is writable (contract).
                unsafe { result.write(value) };
                Ok(0)
            }
        }
    })
}

/// A misuse found by the fast path of [`lutra_capi_settle`]: recorded as the thread's
/// last error.
#[cold]
#[inline(never)]
fn settle_error_slow(error: &CapiError) -> c_int {
    last_error::set("stm_atomically", error);
    error.code
}

/// Called by the shim after `fn` returned `rc` in a nested `stm_atomically`: closes
/// the nested level and returns `rc`; if the attempt is doomed, returns its abort
/// code instead (positive), for the enclosing function to return.
///
/// Internal to the library (used by `c/shim.c`).
#[unsafe(no_mangle)]
pub extern "C" fn lutra_capi_settle_nested(rc: c_int) -> c_int {
    boundary::status("stm_atomically", || {
        with_thread(|state| {
            if state.nesting == 0 {
                return ended(state);
            }
            if state.nesting > 1 {
                state.nesting -= 1;
            }
            match state.desc.doomed() {
                Some(reason) => Ok(state.pending.unwrap_or(abort_code(reason, Site::Commit))),
                None => Ok(rc),
            }
        })
    })
}

/// Runs `fn(arg)` as a transaction of the calling thread until it commits (see the
/// module protocol). Returns 0 once committed; `fn`'s value if it returned non-zero
/// (the transaction is rolled back and not retried; use positive values to tell them
/// from the library's errors); `LUTRA_EABORTED` if an abort that is not retried
/// ended the transaction (whatever `fn` returned); a negative `LUTRA_E*` code on
/// misuse (no registered thread, NULL `fn`, `fn` committing itself).
///
/// Inside `fn`, use the tinySTM accessors (an abort jumps back into
/// `stm_atomically`, over `fn`'s frames: they must be C frames that need no
/// clean-up), or the jump-free `lutra_stm_load` / `lutra_stm_store` and return their
/// positive status at once. Called inside a transaction, `fn` joins it (flat nesting)
/// and its value is returned as is.
///
/// # Safety
/// `fn` must be safe to call with `arg`, any number of times.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_atomically(function: StmAtomicFn, arg: *mut c_void) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { stm_atomically_attr(StmTxAttr::default(), function, arg) }
}

/// As [`stm_atomically`], with the transaction's attributes.
///
/// # Safety
/// As [`stm_atomically`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_atomically_attr(
    attr: StmTxAttr,
    function: StmAtomicFn,
    arg: *mut c_void,
) -> c_int {
    if function.is_none() {
        return boundary::status("stm_atomically", || Err(CapiError::invalid("fn is NULL")));
    }
    // SAFETY: `function` is a valid function (contract); the shim only jumps within
    // its own frame and the C frames above it.
    unsafe { shim::lutra_shim_atomically(attr.attrs, function, arg) }
}
