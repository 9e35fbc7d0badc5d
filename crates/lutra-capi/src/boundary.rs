//! The edge between C and Rust: every ABI function runs its Rust side through
//! [`status`] or [`value`], which turn errors into the thread's last error and a
//! return value, and stop panics.
//!
//! # Invariants
//! - No panic unwinds out of [`status`] or [`value`].
//! - After a caught panic the calling thread's transaction state is discarded (its
//!   attempt rolled back, its descriptor released): whatever invariant the panic broke
//!   dies with it. The thread must call `stm_init_thread` again.

use crate::last_error;
use crate::status::{CapiError, CapiResult, LUTRA_EPANIC};
use crate::thread;
use std::any::Any;
use std::ffi::c_int;
use std::panic::{self, AssertUnwindSafe};

/// Runs the Rust side of the ABI function `function`, which returns a status: an
/// error becomes the thread's last error and its (negative) code.
pub(crate) fn status(function: &'static str, body: impl FnOnce() -> CapiResult<c_int>) -> c_int {
    value(function, |code| code, body)
}

/// Runs the Rust side of the ABI function `function`, which returns a value: an error
/// becomes the thread's last error and `on_error(code)`.
pub(crate) fn value<T>(
    function: &'static str,
    on_error: impl FnOnce(c_int) -> T,
    body: impl FnOnce() -> CapiResult<T>,
) -> T {
    // AssertUnwindSafe: a panic discards the only state the body mutates in place (the
    // thread's transaction state), see the module invariants.
    match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => {
            last_error::set(function, &error);
            on_error(error.code)
        }
        Err(payload) => {
            let error = CapiError::new(
                LUTRA_EPANIC,
                format!(
                    "internal error ({}); this thread's transaction state was discarded",
                    panic_message(payload.as_ref())
                ),
            );
            // Dropping the state may itself panic if the engine is broken: swallow it.
            let _ = panic::catch_unwind(thread::discard);
            last_error::set(function, &error);
            on_error(LUTRA_EPANIC)
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "panic"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::last_error::lutra_last_error_code;
    use crate::status::LUTRA_EINVAL;

    #[test]
    fn errors_and_panics_become_codes() {
        assert_eq!(status("ok", || Ok(3)), 3);
        assert_eq!(
            status("bad", || Err(CapiError::invalid("no"))),
            LUTRA_EINVAL
        );
        assert_eq!(lutra_last_error_code(), LUTRA_EINVAL);
        let previous = panic::take_hook();
        panic::set_hook(Box::new(|_| {}));
        let code = status("boom", || panic!("engine bug"));
        panic::set_hook(previous);
        assert_eq!(code, LUTRA_EPANIC);
        assert_eq!(lutra_last_error_code(), LUTRA_EPANIC);
        assert!(
            value(
                "null",
                |_| std::ptr::null::<u8>(),
                || Err(CapiError::no_init())
            )
            .is_null()
        );
    }
}
