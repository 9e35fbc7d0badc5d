//! tinySTM's transaction functions: `stm_start`, `stm_commit`, `stm_abort`,
//! `stm_active`, `stm_aborted`, `stm_irrevocable`, `stm_set_irrevocable`,
//! `stm_get_env`, `stm_get_attributes`.
//!
//! Nesting is flat, as in tinySTM: a `stm_start` inside a transaction returns NULL
//! and joins it; its `stm_commit` only closes the level; an abort anywhere restarts
//! the outermost transaction.
//!
//! `stm_start` and `stm_commit` have a fast path for a registered plain thread
//! (`fast.rs`): no boundary, no shim call to decode the attributes, no last-error
//! bookkeeping; misuse and tasks take the general path.
//!
//! # Invariants
//! - `stm_commit` returns 1 only when the level was closed or the transaction
//!   committed; every other outcome is a jump, or 0 with the reason recorded (last
//!   error, or `stm_aborted`).

use crate::attempt::Style;
use crate::boundary;
use crate::engine;
use crate::fast;
use crate::shim::{self, SigJmpBuf};
use crate::status::{LUTRA_OK, Site, asks_no_retry, explicit_code};
use crate::thread::{Attributes, ThreadTx, with_thread};
use lutra_stm::AbortReason;
use std::ffi::{c_int, c_uint};

/// tinySTM's `stm_tx_attr_t`, as one integer: a union whose bit-fields only C code
/// reads (the shim decodes them). Passed and returned like tinySTM's union.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StmTxAttr {
    /// The `attrs` member of the union: every attribute bit at once.
    pub attrs: i32,
}

/// Begins (or joins) a transaction on the calling thread; the shim calls it with
/// the decoded attributes. Writes 1 to `*outermost` for an outermost transaction,
/// and then the thread's (or task's) jump buffer to `*env`; 0 when it joined a
/// running one. Returns `LUTRA_OK` or a negative error.
///
/// Internal to the library (used by `c/shim.c`).
///
/// # Safety
/// `outermost` and `env` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lutra_capi_begin(
    raw: i32,
    id: c_uint,
    read_only: c_int,
    no_retry: c_int,
    outermost: *mut c_int,
    env: *mut *mut SigJmpBuf,
) -> c_int {
    let attr = Attributes {
        raw,
        id,
        read_only: read_only != 0,
        no_retry: no_retry != 0,
    };
    // SAFETY: entered from C (the shim); the reference ends with this call.
    if let Some(state) = unsafe { fast::state() } {
        let outer = state.begin(attr);
        // SAFETY: `outermost` and `env` are writable (contract).
        unsafe {
            outermost.write(c_int::from(outer));
            env.write(state.env());
        }
        return LUTRA_OK;
    }
    engine::require_started("stm_start");
    boundary::status("stm_start", || {
        let (outer, buffer) = with_thread(|state| Ok((state.begin(attr), state.env())))?;
        // SAFETY: `outermost` and `env` are writable (contract).
        unsafe {
            outermost.write(c_int::from(outer));
            env.write(buffer);
        }
        Ok(LUTRA_OK)
    })
}

/// tinySTM's `stm_start`: starts a transaction with attributes `attr` on the calling
/// thread and returns the jump buffer on which the caller must call `sigsetjmp`
/// immediately (in a function that stays live until the transaction ends).
///
/// Inside a transaction it returns NULL and joins it (flat nesting): do not call
/// `sigsetjmp` then. On misuse (no registered thread) it returns NULL too, with the
/// thread's last error set; tell the two apart with `stm_active`.
#[unsafe(no_mangle)]
pub extern "C" fn stm_start(attr: StmTxAttr) -> *mut SigJmpBuf {
    // SAFETY: entered from C; the reference ends with this call.
    if let Some(state) = unsafe { fast::state() }
        && state.try_begin_plain(attr.attrs)
    {
        return state.env();
    }
    stm_start_slow(attr)
}

/// Every case of [`stm_start`] but the common one: a plain thread's state decodes
/// the attributes itself; otherwise the shim decodes them and calls
/// [`lutra_capi_begin`].
#[cold]
#[inline(never)]
extern "C" fn stm_start_slow(attr: StmTxAttr) -> *mut SigJmpBuf {
    // SAFETY: entered from C (through `stm_start`); the reference ends with this call.
    if let Some(state) = unsafe { fast::state() } {
        let attr = state.layout.decode(attr.attrs);
        return if state.begin(attr) {
            state.env()
        } else {
            std::ptr::null_mut()
        };
    }
    shim::lutra_shim_start(attr.attrs)
}

/// The status of committing the innermost level: `LUTRA_OK`, an error, or the abort
/// path's status.
#[cold]
#[inline(never)]
fn commit_status() -> c_int {
    engine::require_started("stm_commit");
    boundary::status("stm_commit", || {
        with_thread(|state| {
            state.require_transaction()?;
            if state.nesting > 1 {
                state.nesting -= 1;
                return Ok(LUTRA_OK);
            }
            Ok(match state.commit_outermost() {
                Ok(()) => LUTRA_OK,
                Err(status) => status,
            })
        })
    })
}

/// tinySTM's `stm_commit`: commits the calling thread's transaction (or closes one
/// nested level) and returns 1. If the commit fails, the transaction restarts from
/// its `sigsetjmp` (this call does not return), or, with the `no_retry` attribute,
/// ends, and 0 is returned. Misuse (no registered thread, no transaction) returns 0
/// and sets the thread's last error.
///
/// # Safety
/// If the call may jump, the caller's frames up to the `sigsetjmp` must be C frames.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_commit() -> c_int {
    // SAFETY: entered from C; the reference ends with this call.
    if let Some(state) = unsafe { fast::state() }
        && state.nesting == 1
    {
        if state.try_commit_plain(false) {
            return 1;
        }
        // SAFETY: as this function's; `state` is the caller's.
        return unsafe { stm_commit_outermost(state) };
    }
    // SAFETY: as this function's (the caller's frames are C frames).
    unsafe { stm_commit_slow() }
}

/// [`stm_commit`] of a plain thread's outermost level that the inline commit
/// declined: the straight commit of an attempt that wrote (or of one, solo or
/// instrumented, that freed blocks), else the full commit, then the jump if it
/// restarts.
///
/// # Safety
/// As [`stm_commit`]; `state` is the caller's state from `fast::state`.
#[inline(never)]
unsafe extern "C" fn stm_commit_outermost(state: &mut ThreadTx) -> c_int {
    if state.try_commit_plain(true) {
        return 1;
    }
    match state.commit_outermost() {
        Ok(()) => 1,
        // SAFETY: this frame owns only integers and the state's address.
        Err(status) => unsafe { commit_result(status) },
    }
}

/// What `stm_commit` does with the status of a commit that did not succeed at once:
/// jumps to the restart point if a new attempt runs, otherwise returns 1 for
/// `LUTRA_OK` and 0 for anything else.
///
/// # Safety
/// As [`stm_commit`]; the caller's frame owns nothing to drop.
unsafe fn commit_result(status: c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { shim::jump_if_restarted(status) };
    c_int::from(status == LUTRA_OK)
}

/// Every case of [`stm_commit`] but a plain thread's outermost level: a nested
/// level, a task, misuse.
///
/// # Safety
/// As [`stm_commit`].
#[cold]
#[inline(never)]
unsafe extern "C" fn stm_commit_slow() -> c_int {
    // SAFETY: this frame owns only integers.
    unsafe { commit_result(commit_status()) }
}

/// tinySTM's `stm_abort`: aborts the calling thread's transaction. It restarts from
/// its `sigsetjmp`, which returns `reason | STM_ABORT_EXPLICIT |
/// STM_PATH_INSTRUMENTED` (the two lowest bits of `reason` are ignored). With
/// `STM_ABORT_NO_RETRY` in `reason`, or the `no_retry` attribute, the transaction
/// ends instead and the call returns (`stm_aborted` then returns 1). Misuse (no
/// registered thread, no transaction) returns and sets the thread's last error.
///
/// # Safety
/// As [`stm_commit`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_abort(reason: c_int) {
    engine::require_started("stm_abort");
    let status = boundary::status("stm_abort", || {
        with_thread(|state| {
            state.require_transaction()?;
            let code = explicit_code(reason);
            Ok(state.end_attempt(AbortReason::Explicit, code, asks_no_retry(code)))
        })
    });
    // SAFETY: this frame owns only integers.
    unsafe { shim::jump_if_restarted(status) };
}

/// tinySTM's `stm_active`: 1 if the calling thread runs a transaction, 0 otherwise
/// (also on an unregistered thread, without setting an error). May be called at any
/// time.
#[unsafe(no_mangle)]
pub extern "C" fn stm_active() -> c_int {
    boundary::value(
        "stm_active",
        |_| 0,
        || {
            Ok(c_int::from(
                with_thread(|state| Ok(state.nesting > 0)).unwrap_or(false),
            ))
        },
    )
}

/// tinySTM's `stm_aborted`: 1 if the calling thread's last transaction ended by an
/// abort that was not retried (`no_retry`, `STM_ABORT_NO_RETRY`, or a cancelled
/// `stm_atomically`) and no transaction has started since; 0 otherwise. May be called
/// at any time.
#[unsafe(no_mangle)]
pub extern "C" fn stm_aborted() -> c_int {
    boundary::value(
        "stm_aborted",
        |_| 0,
        || {
            let aborted = with_thread(|state| Ok(state.nesting == 0 && state.ended_by_abort));
            Ok(c_int::from(aborted.unwrap_or(false)))
        },
    )
}

/// tinySTM's `stm_irrevocable`: 1 if the calling thread runs a transaction that is
/// irrevocable, 0 otherwise. May be called at any time.
#[unsafe(no_mangle)]
pub extern "C" fn stm_irrevocable() -> c_int {
    boundary::value(
        "stm_irrevocable",
        |_| 0,
        || {
            let irrevocable =
                with_thread(|state| Ok(state.nesting > 0 && state.desc.is_irrevocable()));
            Ok(c_int::from(irrevocable.unwrap_or(false)))
        },
    )
}

/// tinySTM's `stm_set_irrevocable`: makes the calling thread's transaction
/// irrevocable (it will not abort; at most one transaction is irrevocable at a time,
/// and other updating transactions cannot commit until it ends) and returns 1. If
/// something it read has changed meanwhile, it restarts from its `sigsetjmp` (this
/// call does not return) and the new attempt starts irrevocable. Outside a
/// transaction, it makes the thread's next transaction start irrevocable and returns
/// 1 as well.
///
/// `serial` is accepted for compatibility: Lutra's irrevocable transactions are
/// always serial with respect to other updaters. Misuse (no registered thread)
/// returns 0 and sets the thread's last error.
///
/// # Safety
/// As [`stm_commit`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_set_irrevocable(serial: c_int) -> c_int {
    let _ = serial;
    engine::require_started("stm_set_irrevocable");
    let status = boundary::status("stm_set_irrevocable", || {
        with_thread(|state| {
            if state.nesting == 0 {
                state.start_next_irrevocable();
                return Ok(LUTRA_OK);
            }
            Ok(match state.desc.become_irrevocable() {
                Ok(()) => LUTRA_OK,
                Err(abort) => state.after_abort(abort.reason(), Site::Commit, Style::Restart),
            })
        })
    });
    // SAFETY: this frame owns only integers.
    unsafe { shim::jump_if_restarted(status) };
    c_int::from(status == LUTRA_OK)
}

/// tinySTM's `stm_get_env`: the calling thread's (or task's) jump buffer, or NULL
/// when a transaction is running (a new one would be nested) or the thread is not
/// registered (last error set). For programs that `sigsetjmp` before `stm_start`.
#[unsafe(no_mangle)]
pub extern "C" fn stm_get_env() -> *mut SigJmpBuf {
    boundary::value(
        "stm_get_env",
        |_| std::ptr::null_mut(),
        || {
            with_thread(|state| {
                Ok(if state.nesting > 0 {
                    std::ptr::null_mut()
                } else {
                    state.env()
                })
            })
        },
    )
}

/// tinySTM's `stm_get_attributes`: the attributes the calling thread's current (or
/// last) transaction started with; all zero on an unregistered thread (last error
/// set).
#[unsafe(no_mangle)]
pub extern "C" fn stm_get_attributes() -> StmTxAttr {
    boundary::value(
        "stm_get_attributes",
        |_| StmTxAttr::default(),
        || {
            with_thread(|state| {
                Ok(StmTxAttr {
                    attrs: state.attr_raw,
                })
            })
        },
    )
}
