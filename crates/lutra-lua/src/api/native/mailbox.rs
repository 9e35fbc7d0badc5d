//! `p:send(...)` and `lutra.receive()` natively (see the module's protocol): a
//! process's mailbox is a buffered channel, so both are the channel paths with the
//! mailbox's own handle, labels and errors. Their fallbacks are `Process.send` and
//! `lutra.receive` of `prelude.lua` (which also serves a receive with a timeout).

use super::{
    Action, Answer, begin_send, cannot_send, cannot_wait, lost, park, parkable, perform,
    process_borrowed, receive_or_park, resumed, waker,
};
use crate::channel::{Channel, SendPoll};
use crate::process::ProcessContext;
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;
use std::sync::Arc;

/// What a receive from the own mailbox waits on (its label, as the prelude's).
const RECEIVING: &str = "its mailbox (lutra.receive)";

/// `p:send(...)`.
///
/// # Safety
/// Called by Lua as a native closure of this module.
pub(super) unsafe extern "C-unwind" fn send(state: *mut lua_State) -> c_int {
    // SAFETY: the running thread; `perform` is the last act.
    unsafe {
        let action = start_send(state);
        perform(state, action, send_continued)
    }
}

/// # Safety
/// As [`send`].
unsafe fn start_send(state: *mut lua_State) -> Action {
    // SAFETY: reads of the running thread's stack (see the helpers); the process is
    // borrowed from the handle at position 1, which stays there until the call ends,
    // and only a clone of its mailbox outlives this function (`park`).
    unsafe {
        let args = ffi::lua_gettop(state);
        let fallback = Action::Fallback { args };
        let Some(context) = parkable(state) else {
            return fallback;
        };
        let Some(process) = process_borrowed(state, 1) else {
            return fallback;
        };
        // A finished process's mailbox is closed: the fallback raises the error.
        match begin_send(state, args, context, process.mailbox()) {
            None => fallback,
            Some(None) => Action::Return(Answer::Nothing),
            Some(Some(sequence)) => {
                let label = || format!("send to process#{} ({})", process.id(), process.origin());
                park_sending(context, process.mailbox(), sequence, label)
            }
        }
    }
}

/// Parks the sender of message `sequence` to `mailbox` (its waker registered).
fn park_sending(
    context: &ProcessContext,
    mailbox: &Arc<Channel>,
    sequence: u64,
    label: impl FnOnce() -> String,
) -> Action {
    park(
        context,
        "send to ",
        mailbox,
        || None,
        |_| label(),
        sequence as ffi::lua_KContext,
    )
}

/// The label of the wait the process parked in (its `native_wait`'s).
fn parked_label(context: &ProcessContext) -> Arc<str> {
    match &*context.native_wait.borrow() {
        Some(wait) => wait.label.clone(),
        None => "send to a process".into(),
    }
}

/// `p:send` resumed after waiting for room in the mailbox for message `ctx`.
unsafe extern "C-unwind" fn send_continued(
    state: *mut lua_State,
    _status: c_int,
    ctx: ffi::lua_KContext,
) -> c_int {
    // SAFETY: the running thread; `perform` is the last act.
    unsafe {
        let action = match resumed(state) {
            Some((context, channel, true)) => cannot_send(context, &channel, ctx, Answer::Nothing),
            Some((context, mailbox, false)) => {
                match mailbox.poll_send_with(ctx as u64, waker(context)) {
                    SendPoll::Sent => Action::Return(Answer::Nothing),
                    SendPoll::Closed => {
                        Action::Raise(format!("cannot {}: it has finished", parked_label(context)))
                    }
                    SendPoll::Wait => {
                        let label = parked_label(context);
                        park_sending(context, &mailbox, ctx as u64, || label.to_string())
                    }
                }
            }
            None => lost("send"),
        };
        perform(state, action, send_continued)
    }
}

/// `lutra.receive()`; with a timeout, the fallback.
///
/// # Safety
/// Called by Lua as a native closure of this module.
pub(super) unsafe extern "C-unwind" fn receive(state: *mut lua_State) -> c_int {
    // SAFETY: the running thread; `perform` is the last act.
    unsafe {
        let action = start_receive(state);
        perform(state, action, receive_continued)
    }
}

/// # Safety
/// As [`receive`].
unsafe fn start_receive(state: *mut lua_State) -> Action {
    // SAFETY: a read of the running thread's stack.
    let args = unsafe { ffi::lua_gettop(state) };
    let fallback = Action::Fallback { args };
    if args != 0 {
        return fallback;
    }
    // SAFETY: the running thread.
    let Some(context) = (unsafe { parkable(state) }) else {
        return fallback;
    };
    let mailbox = Arc::clone(context.process.mailbox());
    receive_poll(context, &mailbox)
}

/// One receive attempt on the caller's own mailbox.
fn receive_poll(context: &ProcessContext, mailbox: &Arc<Channel>) -> Action {
    receive_or_park(context, mailbox, RECEIVING, || None, |_| RECEIVING.into())
        // A process's mailbox closes only once the process has finished.
        .unwrap_or_else(|| {
            Action::Raise("internal error in Lutra: a running process's mailbox is closed".into())
        })
}

/// `lutra.receive` resumed after waiting.
unsafe extern "C-unwind" fn receive_continued(
    state: *mut lua_State,
    _status: c_int,
    _ctx: ffi::lua_KContext,
) -> c_int {
    // SAFETY: the running thread; `perform` is the last act.
    unsafe {
        let action = match resumed(state) {
            Some((context, _, true)) => cannot_wait(context),
            Some((context, mailbox, false)) => receive_poll(context, &mailbox),
            None => lost("receive"),
        };
        perform(state, action, receive_continued)
    }
}
