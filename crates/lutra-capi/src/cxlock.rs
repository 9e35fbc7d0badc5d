//! `cxlock.h`: cooperative transactional locks for C (TxLinux's cxspinlocks, seed 003
//! Section 4), over [`lutra_elide::coop`]. A critical section is a function, run as
//! `stm_atomically` runs one: `cx_optimistic(lock, fn, arg)` runs it as a
//! transaction (many holders at once) and again exclusively if it calls
//! `cx_need_exclusive`; `cx_exclusive(lock, fn, arg)` runs it exclusively at once.
//! Inside a transaction both join it (flat nesting).
//!
//! # Protocol: an outermost section
//! 1. `cx_exclusive` marks the thread's next transaction irrevocable.
//! 2. The section runs through `stm_atomically` with `section_attempt` as the
//!    function: at the start of every attempt it enters the lock in the attempt's
//!    mode ([`Driver::begin_attempt`]), then calls the program's `fn`.
//! 3. `cx_need_exclusive` in an optimistic attempt rolls it back and begins the next
//!    one irrevocable (the engine's `restart_irrevocable`), then jumps back into
//!    `stm_atomically`, which calls step 2 again: the section re-runs exclusively.
//! 4. When `stm_atomically` returns, the [`Driver`] (in this module's frame, above
//!    the jump buffer) opens the lock's door again.
//!
//! # Invariants
//! - The Rust frames a jump can cross (`section_attempt`, a nested section, and
//!   `cx_need_exclusive`) own nothing that needs dropping when the program's code
//!   runs or the jump is taken; the [`Driver`], which does, lives in the outermost
//!   call's frame, which no jump crosses.
//! - The lock's door is open again whenever `cx_optimistic` or `cx_exclusive`
//!   returns.

use crate::atomically::stm_atomically;
use crate::attempt::Style;
use crate::boundary;
use crate::shim::{self, StmAtomicFn};
use crate::status::{CapiError, LUTRA_OK, Site, abort_code};
use crate::thread::with_thread;
use lutra_elide::coop::{CoopLock, Driver};
use lutra_stm::AbortReason;
use std::ffi::{c_int, c_void};

/// `cx_mode` outside a transaction.
pub const CX_NONE: c_int = 0;
/// `cx_mode` in an optimistic section (a revocable transaction).
pub const CX_OPTIMISTIC: c_int = 1;
/// `cx_mode` in an exclusive section (an irrevocable transaction).
pub const CX_EXCLUSIVE: c_int = 2;

/// The section function of `cx_optimistic` / `cx_exclusive`: `int fn(void *arg)`.
pub type CxFn = StmAtomicFn;

/// What [`section_attempt`] needs: the outermost level's driver and the program's
/// function.
struct Section<'l> {
    driver: Driver<'l>,
    function: unsafe extern "C" fn(*mut c_void) -> c_int,
    arg: *mut c_void,
}

/// The mode of a running attempt, as a `CX_*` code.
fn mode_code(irrevocable: bool) -> c_int {
    if irrevocable {
        CX_EXCLUSIVE
    } else {
        CX_OPTIMISTIC
    }
}

/// Step 2 of the protocol, called by `stm_atomically` at every attempt: enters the
/// lock, then runs the program's function. Returns its value, or the attempt's abort
/// code (positive: `stm_atomically` restarts) if entering failed.
///
/// # Safety
/// `arg` is the [`Section`] of the enclosing `cx_*` call.
unsafe extern "C" fn section_attempt(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Section` of the outermost call, alive in its frame until
    // `stm_atomically` returns, and used by this thread alone.
    let section = unsafe { &mut *arg.cast::<Section<'_>>() };
    let status = boundary::status("cx_optimistic", || {
        with_thread(|state| {
            let entered = section.driver.begin_attempt(&mut state.desc.transaction());
            Ok(match entered {
                Ok(_) => LUTRA_OK,
                Err(abort) => state.after_abort(abort.reason(), Site::Read, Style::Report),
            })
        })
    });
    if status != LUTRA_OK {
        return status;
    }
    // SAFETY: the program's function, which the caller of `cx_*` vouched for; this
    // frame owns nothing a jump out of it would leak (module invariants).
    unsafe { (section.function)(section.arg) }
}

/// Enters `lock` inside the running transaction (a nested section), reverting the
/// outermost transaction to exclusion first when `exclusive` asks it. Returns
/// `LUTRA_OK`, a restart status (the caller jumps), an abort code, or an error.
fn enter_nested(lock: &CoopLock, exclusive: bool) -> c_int {
    boundary::status("cx_optimistic", || {
        with_thread(|state| {
            if let Some(code) = state.pending {
                return Ok(code);
            }
            if exclusive && !state.desc.is_irrevocable() {
                return Ok(restart_exclusive(state));
            }
            Ok(match lock.enter(&mut state.desc.transaction()) {
                Ok(_) => LUTRA_OK,
                Err(abort) => state.after_abort(abort.reason(), Site::Read, Style::Restart),
            })
        })
    })
}

/// Step 3: rolls the attempt back and begins the next one irrevocable. Returns the
/// restart status (or, for a `no_retry` transaction, the code it ended with).
fn restart_exclusive(state: &mut crate::thread::ThreadTx) -> c_int {
    state.desc.restart_irrevocable();
    let code = abort_code(AbortReason::Irrevocable, Site::Commit);
    state.end_attempt(AbortReason::Irrevocable, code, false)
}

/// A section on `lock`: outermost (steps 1–4) or nested.
///
/// # Safety
/// As [`cx_optimistic`].
unsafe fn section(
    name: &'static str,
    lock: *const CoopLock,
    function: CxFn,
    arg: *mut c_void,
    exclusive: bool,
) -> c_int {
    let (Some(function), false) = (function, lock.is_null()) else {
        return boundary::status(name, || Err(CapiError::invalid("lock or fn is NULL")));
    };
    // SAFETY: a valid `cx_lock_t` (contract), whose layout is `CoopLock`'s.
    let lock = unsafe { &*lock };
    let nested = boundary::status(name, || {
        with_thread(|state| {
            let nested = state.nesting > 0;
            if exclusive && !nested {
                state.start_next_irrevocable();
            }
            Ok(c_int::from(nested))
        })
    });
    match nested {
        0 => {
            let mut section = Section {
                driver: Driver::new(lock),
                function,
                arg,
            };
            let section_ptr = (&raw mut section).cast::<c_void>();
            // SAFETY: `section_attempt` may be called any number of times with the
            // section, which outlives the call.
            unsafe { stm_atomically(Some(section_attempt), section_ptr) }
        }
        1 => {
            let status = enter_nested(lock, exclusive);
            // SAFETY: this frame owns only integers and references.
            unsafe { shim::jump_if_restarted(status) };
            if status != LUTRA_OK {
                return status;
            }
            // SAFETY: the program's function (contract).
            unsafe { function(arg) }
        }
        error => error,
    }
}

/// `cx_optimistic`: runs `fn(arg)` as a critical section under `lock`,
/// optimistically (see the module protocol). Returns as `stm_atomically`: 0 once
/// committed, `fn`'s non-zero value (rolled back, not retried), `LUTRA_EABORTED`, or
/// a negative `LUTRA_E*` error (`LUTRA_EINVAL` for a NULL `lock` or `fn`,
/// `LUTRA_ENOTHREAD`). Inside a transaction, the lock joins it and `fn`'s value is
/// returned as is.
///
/// # Safety
/// `lock` must point to a `cx_lock_t` that outlives the call and is used with this
/// engine only; `fn` must be safe to call with `arg` any number of times, and may
/// jump only over C frames (as for `stm_atomically`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cx_optimistic(
    lock: *const CoopLock,
    function: CxFn,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { section("cx_optimistic", lock, function, arg, false) }
}

/// `cx_exclusive`: runs `fn(arg)` holding `lock` exclusively, in an irrevocable
/// transaction (once, unless it aborts explicitly; it may do I/O). Inside an
/// optimistic transaction, the outermost transaction restarts exclusively first (no
/// return from this call; the section runs again). Returns as [`cx_optimistic`].
///
/// # Safety
/// As [`cx_optimistic`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cx_exclusive(
    lock: *const CoopLock,
    function: CxFn,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { section("cx_exclusive", lock, function, arg, true) }
}

/// `cx_need_exclusive`: in an exclusive section returns `CX_EXCLUSIVE` at once; in an
/// optimistic one, restarts the outermost transaction exclusively (no return: the
/// section runs again from its start, and this call then returns `CX_EXCLUSIVE`).
/// With the `no_retry` attribute the transaction ends instead and its positive abort
/// code is returned. Outside a transaction: `LUTRA_ENOTX`; unregistered:
/// `LUTRA_ENOTHREAD`.
///
/// # Safety
/// The caller's frames up to the transaction's `sigsetjmp` must be C frames.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cx_need_exclusive() -> c_int {
    let status = boundary::status("cx_need_exclusive", || {
        with_thread(|state| {
            state.require_transaction()?;
            Ok(if state.desc.is_irrevocable() {
                CX_EXCLUSIVE
            } else {
                restart_exclusive(state)
            })
        })
    });
    // SAFETY: this frame owns only integers.
    unsafe { shim::jump_if_restarted(status) };
    status
}

/// `cx_mode`: `CX_EXCLUSIVE` inside an exclusive section (an irrevocable
/// transaction), `CX_OPTIMISTIC` inside any other transaction, `CX_NONE` outside
/// (also on an unregistered thread). Any time.
#[unsafe(no_mangle)]
pub extern "C" fn cx_mode() -> c_int {
    boundary::value(
        "cx_mode",
        |_| CX_NONE,
        || {
            let mode = with_thread(|state| {
                Ok((state.nesting > 0).then(|| mode_code(state.desc.is_irrevocable())))
            });
            Ok(mode.ok().flatten().unwrap_or(CX_NONE))
        },
    )
}

/// `cx_held`: 1 if an exclusive section holds `lock` now, 0 if not (a snapshot),
/// `LUTRA_EINVAL` for NULL. Any time, any thread.
///
/// # Safety
/// `lock` must be NULL or point to a `cx_lock_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cx_held(lock: *const CoopLock) -> c_int {
    boundary::status("cx_held", || {
        // SAFETY: NULL or a valid `cx_lock_t` (contract).
        let lock = unsafe { lock.as_ref() }.ok_or_else(|| CapiError::invalid("lock is NULL"))?;
        Ok(c_int::from(lock.is_held()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_constants_match() {
        let header = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include/lutra/cxlock.h"),
        )
        .expect("cxlock.h");
        for (name, value) in [
            ("CX_NONE", CX_NONE),
            ("CX_OPTIMISTIC", CX_OPTIMISTIC),
            ("CX_EXCLUSIVE", CX_EXCLUSIVE),
        ] {
            let define = format!("#define {name} {value}");
            assert!(header.contains(&define), "cxlock.h should say {define}");
        }
    }

    #[test]
    fn layout_is_two_words() {
        assert_eq!(
            std::mem::size_of::<CoopLock>(),
            2 * std::mem::size_of::<usize>()
        );
        assert_eq!(
            std::mem::align_of::<CoopLock>(),
            std::mem::align_of::<usize>()
        );
    }
}
