//! `stm_retry`: blocking retry for C transactions (Harris et al., "Composable
//! memory transactions", PPoPP 2005), which neither tinySTM nor libitm offers. The
//! transaction is abandoned and the thread (or the scheduler's task) sleeps through
//! the engine's parking until another transaction's commit changes a location it
//! read; then it runs again from the start. No CPU is spent while it waits.
//!
//! # Invariants
//! - The wait happens with the attempt rolled back (it holds no locks and announces
//!   no epoch), so nothing waits on a sleeping thread.

use crate::boundary;
use crate::shim;
use crate::status::CapiError;
use crate::thread::{self, with_thread};

/// Lutra's `stm_retry`: abandons the calling thread's transaction, waits until
/// another transaction changes something it read, and runs it again: execution goes
/// back to the transaction's `sigsetjmp` (or, in `__transaction_atomic`, to its
/// start), so the call does not return. Usable inside `stm_start`/`stm_commit`,
/// `stm_atomically` and GCC's `__transaction_atomic` alike.
///
/// Misuse returns, with the thread's last error set (`LUTRA_ENOTX` outside a
/// transaction, on an unregistered thread too, and before any engine runs, as in a
/// `-fgnu-tm` program before its first transaction; `LUTRA_EINVAL` in an irrevocable transaction, which goes on, or in
/// one that read nothing, which is then over, as after a `no_retry` abort). Inside
/// `__transaction_atomic` misuse stops the process with a message instead, since
/// GCC's code cannot go on after it.
///
/// # Safety
/// The caller's frames up to the transaction's `sigsetjmp` (or
/// `__transaction_atomic`) must be C frames or frames that own nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_retry() {
    // A program that calls `stm_retry` runs no transaction uninstrumented from now
    // on, even if no loaded object names it (a caller found by `dlsym`).
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    crate::itm::retry_callers::note_call();
    let status = boundary::status("stm_retry", || {
        if !thread::is_registered() {
            // No transaction can run on an unregistered thread, with or without an
            // engine (a `-fgnu-tm` program starts its engine, and registers each
            // thread, with its first `__transaction_atomic`).
            return Err(CapiError::no_transaction());
        }
        with_thread(|state| {
            state.require_transaction()?;
            state.retry()
        })
    });
    // SAFETY: this frame owns only integers (the caller's contract for the rest).
    unsafe { shim::jump_if_restarted(status) };
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    if let Ok((true, uninstrumented)) =
        with_thread(|state| Ok((state.itm.active, state.itm.uninstrumented_only)))
    {
        if uninstrumented {
            eprintln!(
                "lutra: stm_retry: the transaction runs GCC's uninstrumented code (serial and \
                 irrevocable), which cannot be rolled back; the code calling stm_retry was \
                 loaded after Lutra looked for callers (docs/gnu-tm.md), or the transaction \
                 has no instrumented path"
            );
        } else {
            // SAFETY: `lutra_last_error` returns a NUL-terminated string.
            let reason = unsafe { std::ffi::CStr::from_ptr(crate::last_error::lutra_last_error()) };
            eprintln!("lutra: stm_retry: {}", reason.to_string_lossy());
        }
        std::process::abort();
    }
}
