//! Starting and stopping the library and its threads: `stm_init`,
//! `lutra_stm_init_with`, `stm_exit`, `stm_init_thread`, `stm_exit_thread`,
//! `stm_current_tx`, and the privatization barrier `stm_quiesce`.
//!
//! # Invariants
//! - A thread is unregistered only outside transactions (its attempt never dies with
//!   locks held); the engine is dropped only when no thread is registered
//!   (`engine.rs`).

use crate::boundary;
use crate::engine;
use crate::status::{CapiError, CapiResult, LUTRA_OK};
use crate::thread::{self, with_thread};
use std::ffi::{CStr, c_char, c_int};

/// tinySTM's `struct stm_tx`: the handle of a registered thread, opaque to C.
#[repr(C)]
pub struct StmTx {
    _opaque: [u8; 0],
}

/// A C string argument; NULL is `None`.
///
/// # Safety
/// `text` must be NULL or a NUL-terminated string.
unsafe fn optional_str<'a>(text: *const c_char, what: &str) -> CapiResult<Option<&'a str>> {
    if text.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's contract.
    let text = unsafe { CStr::from_ptr(text) };
    text.to_str()
        .map(Some)
        .map_err(|_| CapiError::invalid(format!("{what} is not UTF-8")))
}

/// tinySTM's `stm_init`: creates the engine, with the design named by the
/// environment variable `LUTRA_STM_DESIGN` (`wb-ctl`, the default, or `wb-etl`),
/// the contention manager named by `LUTRA_STM_CM` (`suicide`, `backoff` (the
/// default), `aggressive`, `timestamp`, `size_matters`, `priority`), and engine
/// statistics off or on by `LUTRA_STM_STATS` (`0`, `1`).
///
/// Call once, before any other function (a second call does nothing). A bad
/// variable is a configuration error that the program cannot see (tinySTM's
/// `stm_init` returns nothing): the process is aborted, after a message on standard
/// error naming the variable, its value and the valid values. Programs that want to
/// handle it call `lutra_stm_init_with`, which returns `LUTRA_EINVAL` instead.
#[unsafe(no_mangle)]
pub extern "C" fn stm_init() {
    let status = boundary::status("stm_init", || {
        if engine::is_running() {
            return Ok(LUTRA_OK);
        }
        let config = engine::config_from_names(None, None)?;
        // Another thread may have initialized meanwhile: then nothing to do.
        let _ = engine::start(config);
        Ok(LUTRA_OK)
    });
    if status != LUTRA_OK {
        init_failed_slow();
    }
}

/// `stm_init` failed: prints the thread's last error and aborts the process.
#[cold]
#[inline(never)]
fn init_failed_slow() -> ! {
    // SAFETY: `lutra_last_error` returns a NUL-terminated string of this thread.
    let message = unsafe { CStr::from_ptr(crate::last_error::lutra_last_error()) };
    eprintln!(
        "lutra: {}; the STM cannot start: aborting",
        message.to_string_lossy()
    );
    std::process::abort();
}

/// Lutra's `stm_init` with explicit choices: `design` (`"wb-ctl"` or `"wb-etl"`) and
/// contention manager `cm` (as for `stm_init`); NULL takes the environment variable,
/// then the default. Returns `LUTRA_OK`, `LUTRA_EINVAL` for an unknown name, or
/// `LUTRA_EALREADY` if the engine runs already (`stm_exit` first).
///
/// # Safety
/// `design` and `cm` must be NULL or NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lutra_stm_init_with(design: *const c_char, cm: *const c_char) -> c_int {
    boundary::status("lutra_stm_init_with", || {
        // SAFETY: forwarded contract.
        let design = unsafe { optional_str(design, "design") }?;
        // SAFETY: forwarded contract.
        let cm = unsafe { optional_str(cm, "cm") }?;
        engine::start(engine::config_from_names(design, cm)?)?;
        Ok(LUTRA_OK)
    })
}

/// tinySTM's `stm_exit`: drops the engine. Call once, after every other thread has
/// called `stm_exit_thread` (a registered calling thread is unregistered first).
///
/// Misuse sets the thread's last error and leaves the engine running: inside a
/// transaction (`LUTRA_EINTX`), other threads still registered (`LUTRA_EBUSY`), no
/// engine (`LUTRA_ENOINIT`). After a successful `stm_exit`, `stm_init` may start a
/// new engine.
#[unsafe(no_mangle)]
pub extern "C" fn stm_exit() {
    boundary::status("stm_exit", || {
        if thread::is_registered() {
            thread::unregister()?;
        }
        engine::stop()?;
        Ok(LUTRA_OK)
    });
}

/// tinySTM's `stm_init_thread`: registers the calling thread, which must do so before
/// it runs transactions, and returns its handle (the same handle on later calls).
/// Returns NULL with the thread's last error set when the engine is not initialized
/// (`LUTRA_ENOINIT`) or too many threads are registered (`LUTRA_ENOMEM`).
#[unsafe(no_mangle)]
pub extern "C" fn stm_init_thread() -> *mut StmTx {
    boundary::value(
        "stm_init_thread",
        |_| std::ptr::null_mut(),
        thread::register,
    )
}

/// tinySTM's `stm_exit_thread`: unregisters the calling thread. Call once a thread
/// runs no more transactions (a thread that exits without it is unregistered when it
/// ends). Misuse sets the thread's last error and does nothing: inside a transaction
/// (`LUTRA_EINTX`), on an unregistered thread (`LUTRA_ENOTHREAD`).
#[unsafe(no_mangle)]
pub extern "C" fn stm_exit_thread() {
    boundary::status("stm_exit_thread", || {
        thread::unregister().map(|()| LUTRA_OK)
    });
}

/// tinySTM's `stm_current_tx`: the calling thread's handle, or NULL if it is not
/// registered (without setting an error). May be called at any time.
#[unsafe(no_mangle)]
pub extern "C" fn stm_current_tx() -> *mut StmTx {
    boundary::value(
        "stm_current_tx",
        |_| std::ptr::null_mut(),
        || {
            if !thread::is_registered() {
                return Ok(std::ptr::null_mut());
            }
            with_thread(|state| Ok(state.handle()))
        },
    )
}

/// Lutra's privatization barrier: waits until every transaction attempt that was
/// running when it was called has ended. Call it outside transactions, after a
/// committed transaction made data unreachable from shared memory, before accessing
/// that data without transactions (or `free`ing it). Returns `LUTRA_OK`,
/// `LUTRA_EINTX` inside a transaction (it would wait for itself), or
/// `LUTRA_ENOINIT`. Needs no registered thread.
#[unsafe(no_mangle)]
pub extern "C" fn stm_quiesce() -> c_int {
    boundary::status("stm_quiesce", || {
        if thread::is_registered() {
            with_thread(|state| state.require_no_transaction())?;
        }
        engine::current()?.quiesce();
        Ok(LUTRA_OK)
    })
}
