//! Status codes of the C ABI and tinySTM's abort codes.
//!
//! | value | meaning |
//! |-------|---------|
//! | `0` | success (`LUTRA_OK`) |
//! | `< 0` | misuse or failure (`LUTRA_E*` below); the thread's last error says more |
//! | `> 0`, bit 0 set | an abort: a new attempt runs, the caller must jump (internal) |
//! | `> 0`, bit 0 clear | an abort: the attempt is doomed or the transaction ended |
//!
//! Positive values are tinySTM abort codes (`STM_ABORT_*`), optionally with
//! `STM_PATH_INSTRUMENTED` (bit 0), the value tinySTM's `sigsetjmp` returns on restart.
//!
//! # Invariants
//! - Every `LUTRA_E*` value is negative and has a matching `#define` in
//!   `include/lutra/stm.h`.
//! - No abort code built here has bit 0 set: only the restart path adds it.

use lutra_stm::AbortReason;
use std::borrow::Cow;
use std::ffi::c_int;

/// Success.
pub const LUTRA_OK: c_int = 0;
/// `stm_init` has not been called, or `stm_exit` has.
pub const LUTRA_ENOINIT: c_int = -1;
/// The calling thread has not called `stm_init_thread` (or has called `stm_exit_thread`).
pub const LUTRA_ENOTHREAD: c_int = -2;
/// No transaction is active on the calling thread.
pub const LUTRA_ENOTX: c_int = -3;
/// Not allowed inside a transaction.
pub const LUTRA_EINTX: c_int = -4;
/// An invalid argument: a NULL pointer, an unknown name, a misaligned address.
pub const LUTRA_EINVAL: c_int = -5;
/// Already initialized.
pub const LUTRA_EALREADY: c_int = -6;
/// Threads are still registered with the engine.
pub const LUTRA_EBUSY: c_int = -7;
/// Out of memory, or more threads than the engine has descriptors for.
pub const LUTRA_ENOMEM: c_int = -8;
/// The transaction was aborted and not retried (`no_retry`, `STM_ABORT_NO_RETRY`).
pub const LUTRA_EABORTED: c_int = -9;
/// An internal error (a bug in Lutra); the thread's transaction state was discarded.
pub const LUTRA_EPANIC: c_int = -10;
/// Needs a task of the scheduler (`sched.h`); the caller is a plain thread.
pub const LUTRA_ENOTASK: c_int = -11;
/// For plain threads, not tasks of the scheduler (it could wait for the caller).
pub const LUTRA_EINTASK: c_int = -12;
/// `sched_wait`: every task waits at the barrier and none is left to complete the
/// round (a deadlock, reported instead of waited for).
pub const LUTRA_EDEADLK: c_int = -13;

/// tinySTM: the attempt restarts on the instrumented path (bit 0 of a jump value).
pub const STM_PATH_INSTRUMENTED: c_int = 0x01;
/// tinySTM: the program called `stm_abort`.
pub const STM_ABORT_EXPLICIT: c_int = 1 << 5;
/// tinySTM: `stm_abort` reason asking not to retry.
pub const STM_ABORT_NO_RETRY: c_int = STM_ABORT_EXPLICIT | (0x01 << 8);
/// tinySTM: an abort the program did not ask for; bits 8..12 tell why.
pub const STM_ABORT_IMPLICIT: c_int = 1 << 6;

const fn implicit(detail: c_int) -> c_int {
    STM_ABORT_IMPLICIT | (detail << 8)
}

/// tinySTM: a read met a location being written by another transaction.
pub const STM_ABORT_WR_CONFLICT: c_int = implicit(0x03);
/// tinySTM: a write met a location being written by another transaction.
pub const STM_ABORT_WW_CONFLICT: c_int = implicit(0x04);
/// tinySTM: validation failed while reading.
pub const STM_ABORT_VAL_READ: c_int = implicit(0x05);
/// tinySTM: validation failed while writing.
pub const STM_ABORT_VAL_WRITE: c_int = implicit(0x06);
/// tinySTM: validation failed while committing.
pub const STM_ABORT_VALIDATE: c_int = implicit(0x07);
/// tinySTM: gave way to an irrevocable transaction.
pub const STM_ABORT_IRREVOCABLE: c_int = implicit(0x09);
/// tinySTM: killed by another transaction.
pub const STM_ABORT_KILLED: c_int = implicit(0x0A);
/// tinySTM: the read or write set reached its size limit.
pub const STM_ABORT_EXTEND_WS: c_int = implicit(0x0C);
/// tinySTM: any other reason.
pub const STM_ABORT_OTHER: c_int = implicit(0x0F);
/// Lutra: the transaction called `stm_retry` and runs again after a change (the
/// code its `sigsetjmp` returns, with `STM_PATH_INSTRUMENTED`).
pub const LUTRA_ABORT_RETRY: c_int = implicit(0x0E);

/// Where an abort was met, which tinySTM's codes distinguish.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Site {
    Read,
    Write,
    Commit,
}

/// The tinySTM code of an abort of `reason` met at `site` (bit 0 clear).
pub(crate) fn abort_code(reason: AbortReason, site: Site) -> c_int {
    match (reason, site) {
        (AbortReason::Validation | AbortReason::Snapshot, Site::Read) => STM_ABORT_VAL_READ,
        (AbortReason::Validation | AbortReason::Snapshot, Site::Write) => STM_ABORT_VAL_WRITE,
        (AbortReason::Validation | AbortReason::Snapshot, Site::Commit) => STM_ABORT_VALIDATE,
        (AbortReason::ReadConflict, _) => STM_ABORT_WR_CONFLICT,
        (AbortReason::WriteConflict, _) => STM_ABORT_WW_CONFLICT,
        (AbortReason::Killed, _) => STM_ABORT_KILLED,
        (AbortReason::Explicit, _) => STM_ABORT_EXPLICIT,
        (AbortReason::Capacity, _) => STM_ABORT_EXTEND_WS,
        (AbortReason::Irrevocable, _) => STM_ABORT_IRREVOCABLE,
        (
            AbortReason::Retry
            | AbortReason::Panic
            | AbortReason::Misuse
            | AbortReason::NotReadOnly,
            _,
        ) => STM_ABORT_OTHER,
    }
}

/// The code `stm_abort(reason)` aborts with: the program's bits (without the two path
/// bits) plus `STM_ABORT_EXPLICIT`, as tinySTM does.
pub(crate) fn explicit_code(reason: c_int) -> c_int {
    (reason & !0x3) | STM_ABORT_EXPLICIT
}

/// Whether an explicit abort code asks not to retry.
pub(crate) fn asks_no_retry(code: c_int) -> bool {
    code & STM_ABORT_NO_RETRY == STM_ABORT_NO_RETRY
}

/// An error reported through a negative status and the thread's last error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CapiError {
    pub(crate) code: c_int,
    pub(crate) message: Cow<'static, str>,
}

/// The result of the Rust side of an ABI function.
pub(crate) type CapiResult<T> = Result<T, CapiError>;

impl CapiError {
    pub(crate) fn new(code: c_int, message: impl Into<Cow<'static, str>>) -> Self {
        debug_assert!(code < 0, "errors are negative");
        Self {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn no_init() -> Self {
        Self::new(
            LUTRA_ENOINIT,
            "the STM is not initialized (call stm_init first)",
        )
    }

    pub(crate) fn no_thread() -> Self {
        Self::new(
            LUTRA_ENOTHREAD,
            "this thread is not registered (call stm_init_thread first)",
        )
    }

    pub(crate) fn no_transaction() -> Self {
        Self::new(LUTRA_ENOTX, "no transaction is active on this thread")
    }

    /// A call in a signal handler that interrupted a transaction of its thread.
    pub(crate) fn in_interrupting_handler() -> Self {
        Self::new(
            LUTRA_EINTX,
            "called in a signal handler that interrupted a transaction of this thread: \
             no transaction can run or be joined there (run it outside the handler, or \
             block the signal during transactions)",
        )
    }

    pub(crate) fn in_transaction() -> Self {
        Self::new(LUTRA_EINTX, "not allowed inside a transaction")
    }

    pub(crate) fn invalid(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(LUTRA_EINVAL, message)
    }

    pub(crate) fn no_task() -> Self {
        Self::new(
            LUTRA_ENOTASK,
            "not called from a task (start one with sched_start)",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_tinystm() {
        assert_eq!(STM_ABORT_EXPLICIT, 0x20);
        assert_eq!(STM_ABORT_NO_RETRY, 0x120);
        assert_eq!(STM_ABORT_VAL_READ, 0x540);
        assert_eq!(STM_ABORT_KILLED, 0xA40);
        assert_eq!(STM_ABORT_OTHER, 0xF40);
    }

    #[test]
    fn no_abort_code_has_the_path_bit() {
        for reason in AbortReason::ALL {
            for site in [Site::Read, Site::Write, Site::Commit] {
                assert_eq!(abort_code(reason, site) & STM_PATH_INSTRUMENTED, 0);
            }
        }
        assert_eq!(explicit_code(0x7) & 0x3, 0);
        assert!(asks_no_retry(explicit_code(STM_ABORT_NO_RETRY)));
        assert!(!asks_no_retry(explicit_code(0)));
    }
}
