//! `ch:send(...)` and `ch:receive()` natively (see the module's protocol); their
//! fallbacks are `Channel.send` and `Channel.receive` of `prelude.lua`.

use super::{
    Action, Answer, begin_send, cannot_send, cannot_wait, channel_borrowed, lost, park, parkable,
    perform, receive_or_park, resumed, waker,
};
use crate::channel::{Channel, SendPoll};
use crate::process::ProcessContext;
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;
use std::sync::Arc;

/// `ch:send(...)`.
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
    // SAFETY: reads of the running thread's stack (see the helpers); the channel is
    // borrowed from the handle at position 1, which stays there until the call ends,
    // and only clones of it outlive this function (`park`).
    unsafe {
        let args = ffi::lua_gettop(state);
        let fallback = Action::Fallback { args };
        let Some(context) = parkable(state) else {
            return fallback;
        };
        let Some(channel) = channel_borrowed(state, 1) else {
            return fallback;
        };
        match begin_send(state, args, context, &channel) {
            None => fallback,
            Some(None) => Action::Return(Answer::Nothing),
            Some(Some(sequence)) => park_sending(context, &channel, sequence),
        }
    }
}

/// Parks the sender of message `sequence` (its waker registered).
fn park_sending(context: &ProcessContext, channel: &Arc<Channel>, sequence: u64) -> Action {
    park(
        context,
        "send on ",
        channel,
        || None,
        |_| format!("send on channel#{}", channel.id()),
        sequence as ffi::lua_KContext,
    )
}

/// Polls the send of message `sequence` (registering the caller if it must wait).
fn send_poll(context: &ProcessContext, channel: &Arc<Channel>, sequence: u64) -> Action {
    match channel.poll_send_with(sequence, waker(context)) {
        SendPoll::Sent => Action::Return(Answer::Nothing),
        SendPoll::Closed => Action::Raise(format!(
            "send on channel#{}: the channel was closed before the message was received",
            channel.id()
        )),
        SendPoll::Wait => park_sending(context, channel, sequence),
    }
}

/// `ch:send` resumed after waiting for message `ctx` to be received.
unsafe extern "C-unwind" fn send_continued(
    state: *mut lua_State,
    _status: c_int,
    ctx: ffi::lua_KContext,
) -> c_int {
    // SAFETY: the running thread; `perform` is the last act.
    unsafe {
        let action = match resumed(state) {
            Some((context, channel, true)) => cannot_send(context, &channel, ctx, Answer::Nothing),
            Some((context, channel, false)) => send_poll(context, &channel, ctx as u64),
            None => lost("send"),
        };
        perform(state, action, send_continued)
    }
}

/// `ch:receive()`.
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
    // SAFETY: as in `start_send`.
    unsafe {
        let fallback = Action::Fallback {
            args: ffi::lua_gettop(state),
        };
        let Some(context) = parkable(state) else {
            return fallback;
        };
        let Some(channel) = channel_borrowed(state, 1) else {
            return fallback;
        };
        receive_poll(context, &channel).unwrap_or(fallback)
    }
}

/// One receive attempt; `None` when the channel is closed and drained.
fn receive_poll(context: &ProcessContext, channel: &Arc<Channel>) -> Option<Action> {
    receive_or_park(
        context,
        channel,
        "receive on ",
        || None,
        |_| format!("receive on channel#{}", channel.id()),
    )
}

/// `ch:receive` resumed after waiting.
unsafe extern "C-unwind" fn receive_continued(
    state: *mut lua_State,
    _status: c_int,
    _ctx: ffi::lua_KContext,
) -> c_int {
    // SAFETY: the running thread; `perform` is the last act.
    unsafe {
        let action = match resumed(state) {
            Some((context, _, true)) => cannot_wait(context),
            Some((context, channel, false)) => {
                receive_poll(context, &channel).unwrap_or_else(|| {
                    context.process.leave_channels();
                    Action::Raise(format!(
                        "receive on channel#{}: the channel is closed",
                        channel.id()
                    ))
                })
            }
            None => lost("receive"),
        };
        perform(state, action, receive_continued)
    }
}
