//! The C shim (`c/shim.c`), seen from Rust: the thread's `sigjmp_buf`, the jump, and
//! the parts of the ABI that must be written in C (decoding `stm_tx_attr_t`, the
//! `sigsetjmp` of `stm_atomically`).
//!
//! # Invariants
//! - [`jump_if_restarted`] is only called from trampolines whose frame owns nothing
//!   that needs dropping, after every call into the engine has returned.

use crate::status::STM_PATH_INSTRUMENTED;
use std::ffi::{c_int, c_void};

/// tinySTM's `sigjmp_buf`, opaque to Rust.
#[repr(C)]
pub struct SigJmpBuf {
    _opaque: [u8; 0],
}

/// The function `stm_atomically` runs: `int fn(void *arg)`.
pub type StmAtomicFn = Option<unsafe extern "C" fn(arg: *mut c_void) -> c_int>;

unsafe extern "C" {
    /// The calling thread's jump buffer.
    pub(crate) safe fn lutra_shim_env() -> *mut SigJmpBuf;
    /// `siglongjmp`s to the thread's buffer with `status`.
    fn lutra_shim_jump(status: c_int) -> !;
    /// Decodes `attrs`, begins (or joins) a transaction; returns the jump buffer for an
    /// outermost transaction, NULL when nested or on error.
    pub(crate) safe fn lutra_shim_start(attrs: i32) -> *mut SigJmpBuf;
    /// Runs `fn(arg)` as a transaction with attributes `attrs` (see `stm_atomically`).
    pub(crate) fn lutra_shim_atomically(
        attrs: i32,
        function: StmAtomicFn,
        arg: *mut c_void,
    ) -> c_int;
}

/// Jumps back to the start of the transaction when `status` says that a new attempt
/// runs (step 4 of the abort protocol); returns otherwise.
///
/// # Safety
/// The caller's frame must own nothing that needs dropping, and the jump buffer must
/// have been filled by `sigsetjmp` in a frame that is still live (tinySTM's contract
/// for `stm_start`, or `stm_atomically`'s own frame).
#[inline(always)]
pub(crate) unsafe fn jump_if_restarted(status: c_int) {
    if status > 0 && status & STM_PATH_INSTRUMENTED != 0 {
        // SAFETY: the caller's contract; a positive status with the path bit comes
        // only from the restart path, after a fresh attempt has begun.
        unsafe { lutra_shim_jump(status) }
    }
}
