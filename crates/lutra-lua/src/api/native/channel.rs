//! `ch:send(...)` and `ch:receive()` natively (see the module's protocol); their
//! fallbacks are `Channel.send` and `Channel.receive` of `prelude.lua`.

use super::call::MessageCall;
use super::handles::channel_borrowed;
use super::perform::{Action, Answer};
use super::wait::{cannot_send, park, receive_or_park, resume_send, start_send};
use crate::api::texts;
use crate::channel::Channel;
use crate::process::ProcessContext;
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;
use std::sync::Arc;

/// `ch:send(...)`.
pub(super) struct Send;

impl MessageCall for Send {
    const NAME: &'static str = "send";

    #[inline(always)]
    unsafe fn start(
        state: *mut lua_State,
        args: c_int,
        context: &ProcessContext,
    ) -> Option<Action> {
        // SAFETY: reads of the running thread's stack (see the helpers); the channel
        // is borrowed from the handle at position 1, which stays there until the call
        // ends, and only clones of it outlive this function (`park`).
        unsafe {
            let channel = channel_borrowed(state, 1, context)?;
            let park = |sequence| park_sending(context, &channel, sequence);
            start_send(
                state,
                args,
                context,
                &channel,
                Answer::Nothing,
                || None,
                park,
            )
        }
    }

    /// Polls the send of message `ctx` (registering the caller if it must wait).
    #[inline(always)]
    fn resume(context: &ProcessContext, channel: &Arc<Channel>, ctx: ffi::lua_KContext) -> Action {
        let closed = || {
            let name = texts::channel_name(channel.id());
            Action::Raise(texts::CLOSED_BEFORE_RECEIVED.fill(&[&name]))
        };
        let park = |sequence| park_sending(context, channel, sequence);
        resume_send(context, channel, ctx, Answer::Nothing, closed, park)
    }

    fn interrupted(
        context: &ProcessContext,
        channel: &Arc<Channel>,
        ctx: ffi::lua_KContext,
    ) -> Action {
        cannot_send(context, channel, ctx, Answer::Nothing)
    }
}

/// Parks the sender of message `sequence` (its waker registered).
fn park_sending(context: &ProcessContext, channel: &Arc<Channel>, sequence: u64) -> Action {
    park(
        context,
        texts::SEND_ON,
        channel,
        || None,
        |_| texts::label(texts::SEND_ON, texts::channel_name(channel.id())),
        sequence as ffi::lua_KContext,
    )
}

/// `ch:receive()`.
pub(super) struct Receive;

impl MessageCall for Receive {
    const NAME: &'static str = "receive";

    #[inline(always)]
    unsafe fn start(state: *mut lua_State, _: c_int, context: &ProcessContext) -> Option<Action> {
        // SAFETY: as in `Send::start`.
        let channel = unsafe { channel_borrowed(state, 1, context) }?;
        receive_poll::<true>(context, &channel)
    }

    #[inline(always)]
    fn resume(context: &ProcessContext, channel: &Arc<Channel>, _: ffi::lua_KContext) -> Action {
        receive_poll::<false>(context, channel).unwrap_or_else(|| {
            context.process.leave_channels();
            Action::Raise(texts::RECEIVE_CLOSED.fill(&[&texts::channel_name(channel.id())]))
        })
    }
}

/// One receive attempt (`FIRST`: the call's first); `None` when the channel is
/// closed and drained.
fn receive_poll<const FIRST: bool>(
    context: &ProcessContext,
    channel: &Arc<Channel>,
) -> Option<Action> {
    receive_or_park::<FIRST>(
        context,
        channel,
        texts::RECEIVE_ON,
        || None,
        |_| texts::label(texts::RECEIVE_ON, texts::channel_name(channel.id())),
    )
}
