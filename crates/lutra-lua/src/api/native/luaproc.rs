//! `luaproc.send(name, ...)` and `luaproc.receive(name)` natively (see the module's
//! protocol); their fallbacks are the functions of `luaproc.lua`, which also fill the
//! cache of named channels (upvalue 4: name → handle) whenever they look a name up.
//! A cached channel that was deleted is closed: the native call then falls back, and
//! the fallback finds what the name means now. The process also keeps the last
//! channel a native call found by name (`ProcessContext::last_named`), looked up
//! first; a call that finds it closed forgets it before falling back.

use super::NAMED;
use super::call::MessageCall;
use super::handles::channel_at;
use super::perform::{Action, Answer};
use super::wait::{cannot_send, park, parked_name, receive_or_park, resume_send, start_send};
use crate::api::texts;
use crate::channel::Channel;
use crate::process::ProcessContext;
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;
use std::sync::Arc;

/// The channel cached for the name at position 1; `None` if the name is not a string
/// or not cached. The process's last one is looked up first (no table lookup), then
/// the cache of named channels, which then becomes the process's last one.
///
/// # Safety
/// `state` runs a native closure of this module with at least one argument.
unsafe fn named_channel(state: *mut lua_State, context: &ProcessContext) -> Option<Arc<Channel>> {
    // SAFETY: stack operations on the running thread (balanced); the name's bytes
    // are read while it is on the stack; the cache is upvalue 4.
    unsafe {
        if ffi::lua_type(state, 1) != ffi::LUA_TSTRING {
            return None;
        }
        let mut length = 0;
        let bytes = ffi::lua_tolstring(state, 1, &mut length);
        let bytes = std::slice::from_raw_parts(bytes.cast::<u8>(), length);
        if let Some((name, channel)) = &*context.last_named.borrow()
            && **name == *bytes
        {
            return Some(channel.clone());
        }
        ffi::lua_pushvalue(state, 1);
        ffi::lua_rawget(state, ffi::lua_upvalueindex(NAMED));
        let channel = channel_at(state, ffi::lua_gettop(state));
        ffi::lua_pop(state, 1);
        if let Some(channel) = &channel {
            *context.last_named.borrow_mut() = Some((bytes.into(), channel.clone()));
        }
        channel
    }
}

/// `None` (the fallback), after forgetting the process's last named channel: it was
/// closed (deleted, perhaps), and the fallback finds what the name means now.
#[cold]
fn refresh(context: &ProcessContext) -> Option<Action> {
    context.last_named.borrow_mut().take();
    None
}

/// The name at position 1 (a string, checked when the call started).
///
/// # Safety
/// As [`named_channel`], before anything was pushed or popped.
unsafe fn name(state: *mut lua_State) -> Arc<str> {
    // SAFETY: the string at position 1, copied at once.
    unsafe {
        let mut length = 0;
        let bytes = ffi::lua_tolstring(state, 1, &mut length);
        if bytes.is_null() {
            return "".into();
        }
        String::from_utf8_lossy(std::slice::from_raw_parts(bytes.cast::<u8>(), length)).into()
    }
}

/// `luaproc.send(name, ...)`.
pub(super) struct Send;

impl MessageCall for Send {
    const NAME: &'static str = "luaproc.send";

    #[inline(always)]
    unsafe fn accepts(_: *mut lua_State, args: c_int) -> bool {
        args >= 1
    }

    #[inline(always)]
    unsafe fn start(
        state: *mut lua_State,
        args: c_int,
        context: &ProcessContext,
    ) -> Option<Action> {
        // SAFETY: reads of the running thread's stack (see the helpers).
        unsafe {
            let channel = named_channel(state, context)?;
            let closed = || refresh(context);
            let park = |sequence| park_sending(context, &channel, sequence, || name(state));
            start_send(state, args, context, &channel, Answer::True, closed, park)
        }
    }

    /// Polls the send of message `ctx`; a closed channel answers
    /// `nil, "channel 'name' destroyed while waiting for receiver"`.
    #[inline(always)]
    fn resume(context: &ProcessContext, channel: &Arc<Channel>, ctx: ffi::lua_KContext) -> Action {
        let closed = || {
            let name = parked_name(context);
            Action::Return(Answer::NilAnd(texts::LUAPROC_SEND_DESTROYED.fill(&[&name])))
        };
        let park = |sequence| {
            // Read before parking: `park` holds the wait it notes while it names it.
            let name = parked_name(context);
            park_sending(context, channel, sequence, || name)
        };
        resume_send(context, channel, ctx, Answer::True, closed, park)
    }

    fn interrupted(
        context: &ProcessContext,
        channel: &Arc<Channel>,
        ctx: ffi::lua_KContext,
    ) -> Action {
        cannot_send(context, channel, ctx, Answer::True)
    }
}

/// Parks the sender of message `sequence` on the channel called `name()` (its waker
/// registered).
fn park_sending(
    context: &ProcessContext,
    channel: &Arc<Channel>,
    sequence: u64,
    name: impl FnOnce() -> Arc<str>,
) -> Action {
    park(
        context,
        texts::LUAPROC_SEND,
        channel,
        || Some(name()),
        |name| texts::named_label(texts::LUAPROC_SEND, name.unwrap_or_default()),
        sequence as ffi::lua_KContext,
    )
}

/// `luaproc.receive(name [, async])`.
pub(super) struct Receive;

impl MessageCall for Receive {
    const NAME: &'static str = "luaproc.receive";

    /// The asynchronous form (a true second argument) is the fallback's.
    #[inline(always)]
    unsafe fn accepts(state: *mut lua_State, args: c_int) -> bool {
        // SAFETY: a read of argument 2, which exists.
        args == 1 || (args >= 2 && unsafe { ffi::lua_toboolean(state, 2) } == 0)
    }

    #[inline(always)]
    unsafe fn start(state: *mut lua_State, _: c_int, context: &ProcessContext) -> Option<Action> {
        // SAFETY: reads of the running thread's stack (see the helpers).
        unsafe {
            let channel = named_channel(state, context)?;
            receive_poll::<true>(context, &channel, || name(state)).or_else(|| refresh(context))
        }
    }

    #[inline(always)]
    fn resume(context: &ProcessContext, channel: &Arc<Channel>, _: ffi::lua_KContext) -> Action {
        let name = parked_name(context);
        receive_poll::<false>(context, channel, || name.clone()).unwrap_or_else(|| {
            context.process.leave_channels();
            Action::Return(Answer::NilAnd(
                texts::LUAPROC_RECEIVE_DESTROYED.fill(&[&name]),
            ))
        })
    }
}

/// One receive attempt on the channel called `name()` (`FIRST`: the call's first);
/// `None` when it is closed.
fn receive_poll<const FIRST: bool>(
    context: &ProcessContext,
    channel: &Arc<Channel>,
    name: impl FnOnce() -> Arc<str>,
) -> Option<Action> {
    receive_or_park::<FIRST>(
        context,
        channel,
        texts::LUAPROC_RECEIVE,
        || Some(name()),
        |name| texts::named_label(texts::LUAPROC_RECEIVE, name.unwrap_or_default()),
    )
}
