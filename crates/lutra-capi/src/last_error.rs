//! The thread's last error: a code and a message, kept until the next error on the
//! same thread (or `lutra_clear_error`), as `errno` and `dlerror` do. In a task of the
//! scheduler, "thread" means the task (`locals.rs`).
//!
//! # Invariants
//! - The message handed to C is NUL-terminated and stays valid until the next error is
//!   recorded on the same thread or task, `lutra_clear_error`, or the thread's (task's)
//!   exit.

use crate::locals;
use crate::status::{CapiError, LUTRA_OK};
use std::ffi::{CString, c_char, c_int};

/// One recorded error.
pub(crate) struct LastError {
    code: c_int,
    message: CString,
}

/// Records `error`, raised by the ABI function `function`, as the thread's last error.
pub(crate) fn set(function: &str, error: &CapiError) {
    let text = format!("{function}: {}", error.message).replace('\0', " ");
    let message = CString::new(text).unwrap_or_default();
    // A thread being torn down has no last error any more: nothing to record.
    let _ = locals::with(|locals| {
        if let Ok(mut last) = locals.last_error.try_borrow_mut() {
            *last = Some(LastError {
                code: error.code,
                message,
            });
        }
    });
}

/// The message of the calling thread's last error: `"function: what went wrong"`, or
/// the empty string when no error was recorded since the thread started or since
/// [`lutra_clear_error`].
///
/// May be called at any time, from any thread or task. Never returns NULL. The string
/// stays valid until the next error on this thread (task) or `lutra_clear_error`.
#[unsafe(no_mangle)]
pub extern "C" fn lutra_last_error() -> *const c_char {
    static EMPTY: &std::ffi::CStr = c"";
    locals::with(|locals| match locals.last_error.try_borrow().as_deref() {
        Ok(Some(last)) => last.message.as_ptr(),
        _ => EMPTY.as_ptr(),
    })
    .unwrap_or(EMPTY.as_ptr())
}

/// The code of the calling thread's last error (a negative `LUTRA_E*` value), or
/// `LUTRA_OK` when none was recorded. May be called at any time, from any thread or
/// task.
#[unsafe(no_mangle)]
pub extern "C" fn lutra_last_error_code() -> c_int {
    locals::with(|locals| match locals.last_error.try_borrow().as_deref() {
        Ok(Some(last)) => last.code,
        _ => LUTRA_OK,
    })
    .unwrap_or(LUTRA_OK)
}

/// Forgets the calling thread's last error. May be called at any time.
#[unsafe(no_mangle)]
pub extern "C" fn lutra_clear_error() {
    let _ = locals::with(|locals| {
        if let Ok(mut last) = locals.last_error.try_borrow_mut() {
            *last = None;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::LUTRA_EINVAL;
    use std::ffi::CStr;

    #[test]
    fn records_and_clears() {
        lutra_clear_error();
        assert_eq!(lutra_last_error_code(), LUTRA_OK);
        set("stm_load", &CapiError::invalid("address is NULL"));
        assert_eq!(lutra_last_error_code(), LUTRA_EINVAL);
        // SAFETY: the pointer is a NUL-terminated string owned by this thread.
        let text = unsafe { CStr::from_ptr(lutra_last_error()) };
        assert_eq!(text.to_str().unwrap(), "stm_load: address is NULL");
        lutra_clear_error();
        // SAFETY: as above.
        assert!(unsafe { CStr::from_ptr(lutra_last_error()) }.is_empty());
    }
}
