//! The library's identity and its errors: `_ITM_versionCompatible`,
//! `_ITM_libraryVersion`, `_ITM_error`, and `fatal`, how every function of the
//! ABI stops the process when it is used in a way it cannot honour.
//!
//! # Invariants
//! - The ABI has no error returns: misuse and `_ITM_error` print one line
//!   (`lutra: FUNCTION: MESSAGE`) on standard error and abort the process.

use std::ffi::{CStr, c_char, c_int};

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
