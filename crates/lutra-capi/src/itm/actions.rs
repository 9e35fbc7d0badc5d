//! User actions of the ABI: `_ITM_addUserCommitAction` (run after the
//! transaction commits) and `_ITM_addUserUndoAction` (run when it rolls back), and
//! the `_ITM_dropReferences` hint.
//!
//! # Invariants
//! - Actions are recorded in the thread's `ItmFrame` and only run outside any
//!   access to the thread's state (`transaction.rs` runs commit actions after the
//!   commit, `Resumption::run` undo actions, newest first, before resuming).
//! - A commit discards the undo actions; a rollback discards the commit actions.

use super::UserAction;
use super::library::fatal;
use super::thread_state::on_thread;
use crate::thread::ThreadTx;
use std::ffi::c_void;

/// libitm's `_ITM_addUserCommitAction`: calls `action(arg)` after the calling
/// thread's transaction commits (never if it rolls back). `resuming_id` is ignored
/// (Lutra's nesting is flat). Outside a transaction it stops the process.
///
/// # Safety
/// `action` must be safe to call with `arg` after the commit.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ITM_addUserCommitAction(
    action: UserAction,
    resuming_id: u64,
    arg: *mut c_void,
) {
    let _ = resuming_id;
    add_action("_ITM_addUserCommitAction", |state| {
        state.itm.commit_actions.push((action, arg as usize));
    });
}

/// libitm's `_ITM_addUserUndoAction`: calls `action(arg)` if the calling thread's
/// transaction rolls back (a restart or a cancel), newest first. Outside a
/// transaction it stops the process.
///
/// # Safety
/// `action` must be safe to call with `arg` when the transaction rolls back.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ITM_addUserUndoAction(action: UserAction, arg: *mut c_void) {
    add_action("_ITM_addUserUndoAction", |state| {
        state.itm.undo_actions.push((action, arg as usize));
    });
}

fn add_action(function: &str, push: impl FnOnce(&mut ThreadTx)) {
    on_thread(function, |state| {
        if state.nesting == 0 {
            fatal(function, "no transaction is running");
        }
        push(state);
    });
}

/// libitm's `_ITM_dropReferences`: a hint that a range is no longer shared; Lutra
/// needs none, so this does nothing. May be called at any time.
#[unsafe(no_mangle)]
pub extern "C" fn _ITM_dropReferences(start: *const c_void, size: usize) {
    let _ = (start, size);
}
