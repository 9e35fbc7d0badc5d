//! The ABI's questions about the calling thread's transaction:
//! `_ITM_inTransaction` and `_ITM_getTransactionId`.
//!
//! # Invariants
//! - Both may be called at any time, inside a transaction or not, on any thread
//!   (registered or not): they never stop the process and change nothing.
//! - Ids are unique per thread and grow with each outermost transaction
//!   (`ItmFrame::id`); 1 (`_ITM_noTransactionId`) means none.

use super::NO_TRANSACTION_ID;
use crate::thread::with_thread;
use std::ffi::c_int;

/// libitm's `_ITM_inTransaction`: 0 outside transactions, 2 inside an irrevocable
/// one, 1 inside any other. May be called at any time.
#[unsafe(no_mangle)]
pub extern "C" fn _ITM_inTransaction() -> c_int {
    with_thread(|state| {
        Ok(match state.nesting {
            0 => 0,
            _ if state.desc.is_irrevocable() => 2,
            _ => 1,
        })
    })
    .unwrap_or(0)
}

/// libitm's `_ITM_getTransactionId`: the id of the calling thread's running
/// transaction (2 or more), or 1 (`_ITM_noTransactionId`) outside transactions. Ids
/// are unique per thread. May be called at any time.
#[unsafe(no_mangle)]
pub extern "C" fn _ITM_getTransactionId() -> u64 {
    with_thread(|state| {
        Ok(if state.nesting > 0 {
            state.itm.id.max(NO_TRANSACTION_ID + 1)
        } else {
            NO_TRANSACTION_ID
        })
    })
    .unwrap_or(NO_TRANSACTION_ID)
}
