//! The C shim (`c/shim.c`), seen from Rust: jump buffers, the jump, and the parts of
//! the ABI that must be written in C (decoding `stm_tx_attr_t`, the `sigsetjmp` of
//! `stm_atomically`).
//!
//! # Invariants
//! - [`jump_if_restarted`] is only called from trampolines whose frame owns nothing
//!   that needs dropping, after every call into the engine has returned.
//! - Every registered thread or task owns one [`JumpBuffer`] (in its `ThreadTx`); no
//!   jump buffer lives in C thread-local storage, which the tasks of a worker share.

use crate::status::STM_PATH_INSTRUMENTED;
use crate::thread;
use std::ffi::{c_int, c_void};
use std::ptr::NonNull;

/// tinySTM's `sigjmp_buf`, opaque to Rust.
#[repr(C)]
pub struct SigJmpBuf {
    _opaque: [u8; 0],
}

/// The function `stm_atomically` runs: `int fn(void *arg)`.
pub type StmAtomicFn = Option<unsafe extern "C" fn(arg: *mut c_void) -> c_int>;

unsafe extern "C" {
    /// Writes the bits of `stm_tx_attr_t.attrs` holding `id`, `read_only` and
    /// `no_retry`.
    pub(crate) safe fn lutra_shim_attr_layout(
        id: &mut i32,
        read_only: &mut i32,
        no_retry: &mut i32,
    );
    /// A zeroed jump buffer from `calloc`, or NULL.
    safe fn lutra_shim_env_new() -> *mut SigJmpBuf;
    /// Frees a buffer of `lutra_shim_env_new`.
    fn lutra_shim_env_free(env: *mut SigJmpBuf);
    /// `siglongjmp`s to `env` with `status`.
    fn lutra_shim_jump(env: *mut SigJmpBuf, status: c_int) -> !;
    /// Decodes `attrs`, begins (or joins) a transaction; returns the caller's jump
    /// buffer for an outermost transaction, NULL when nested or on error.
    pub(crate) safe fn lutra_shim_start(attrs: i32) -> *mut SigJmpBuf;
    /// Runs `fn(arg)` as a transaction with attributes `attrs` (see `stm_atomically`).
    pub(crate) fn lutra_shim_atomically(
        attrs: i32,
        function: StmAtomicFn,
        arg: *mut c_void,
    ) -> c_int;
}

/// The jump buffer of one registered thread or task, allocated by the shim.
#[derive(Debug)]
pub(crate) struct JumpBuffer(NonNull<SigJmpBuf>);

// SAFETY: the buffer is plain memory owned by this value, tied to no thread; the
// thread or task that owns the `ThreadTx` around it is its only user.
unsafe impl Send for JumpBuffer {}

impl JumpBuffer {
    /// A new buffer; `None` when out of memory.
    pub(crate) fn new() -> Option<Self> {
        NonNull::new(lutra_shim_env_new()).map(Self)
    }

    /// The buffer, for `sigsetjmp` and `siglongjmp`.
    pub(crate) fn as_ptr(&self) -> *mut SigJmpBuf {
        self.0.as_ptr()
    }
}

impl Drop for JumpBuffer {
    fn drop(&mut self) {
        // SAFETY: the pointer came from `lutra_shim_env_new` and is freed once, here.
        unsafe { lutra_shim_env_free(self.0.as_ptr()) }
    }
}

/// Jumps back to the start of the transaction when `status` says that a new attempt
/// runs (step 4 of the abort protocol); returns otherwise.
///
/// # Safety
/// The caller's frame must own nothing that needs dropping, and the calling thread's
/// (or task's) jump buffer must have been filled by `sigsetjmp` in a frame that is
/// still live (tinySTM's contract for `stm_start`, or `stm_atomically`'s own frame).
#[inline(always)]
pub(crate) unsafe fn jump_if_restarted(status: c_int) {
    if status > 0 && status & STM_PATH_INSTRUMENTED != 0 {
        // SAFETY: the caller's contract.
        unsafe { restart_jump(status) }
    }
}

/// The jump of [`jump_if_restarted`], out of line.
///
/// # Safety
/// As [`jump_if_restarted`].
#[cold]
#[inline(never)]
unsafe fn restart_jump(status: c_int) -> ! {
    // A restart status comes only from the restart path, which has just begun a fresh
    // attempt on the caller's registered state: its restart point is there.
    match thread::restart_target() {
        // SAFETY: `env` was filled by the caller's `sigsetjmp` in a frame still live
        // and only C frames and owning-nothing trampolines lie above it (the contract
        // of `jump_if_restarted`).
        Some(thread::RestartTarget::Buffer(env)) => unsafe { lutra_shim_jump(env, status) },
        // SAFETY: the same contract, for the checkpoint of `_ITM_beginTransaction`.
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        Some(thread::RestartTarget::Checkpoint(resumption)) => unsafe { resumption.run() },
        None => {
            eprintln!("lutra: internal error: a transaction restarted without its state");
            std::process::abort();
        }
    }
}
