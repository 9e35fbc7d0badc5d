//! `p:send(...)` and `lutra.receive()` natively (see the module's protocol): a
//! process's mailbox is a buffered channel, so both are the channel paths with the
//! mailbox's own handle, labels and errors. Their fallbacks are `Process.send` and
//! `lutra.receive` of `prelude.lua` (which also serves a receive with a timeout).

use super::call::MessageCall;
use super::handles::process_borrowed;
use super::perform::{Action, Answer};
use super::wait::{cannot_send, park, parked_label, receive_or_park, resume_send, start_send};
use crate::api::texts;
use crate::channel::Channel;
use crate::process::ProcessContext;
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;
use std::sync::Arc;

/// `p:send(...)`.
pub(super) struct Send;

impl MessageCall for Send {
    const NAME: &'static str = "send";

    #[inline(always)]
    unsafe fn start(
        state: *mut lua_State,
        args: c_int,
        context: &ProcessContext,
    ) -> Option<Action> {
        // SAFETY: reads of the running thread's stack (see the helpers); the process
        // is borrowed from the handle at position 1, which stays there until the call
        // ends, and only a clone of its mailbox outlives this function (`park`).
        unsafe {
            let process = process_borrowed(state, 1, context)?;
            // A finished process's mailbox is closed: the fallback raises the error.
            let park = |sequence| {
                let label = || {
                    let name = texts::process_name(process.id(), process.origin());
                    texts::label(texts::SEND_TO, name)
                };
                park_sending(context, process.mailbox(), sequence, label)
            };
            let mailbox = process.mailbox();
            start_send(
                state,
                args,
                context,
                mailbox,
                Answer::Nothing,
                || None,
                park,
            )
        }
    }

    /// Polls the send of message `ctx` into the mailbox (registering the caller if
    /// it must wait).
    #[inline(always)]
    fn resume(context: &ProcessContext, mailbox: &Arc<Channel>, ctx: ffi::lua_KContext) -> Action {
        let closed = || {
            let label = parked_label(context, SENDING);
            Action::Raise(texts::PROCESS_FINISHED.fill(&[&label]))
        };
        let park = |sequence| {
            let label = parked_label(context, SENDING);
            park_sending(context, mailbox, sequence, || label.to_string())
        };
        resume_send(context, mailbox, ctx, Answer::Nothing, closed, park)
    }

    fn interrupted(
        context: &ProcessContext,
        channel: &Arc<Channel>,
        ctx: ffi::lua_KContext,
    ) -> Action {
        cannot_send(context, channel, ctx, Answer::Nothing)
    }
}

/// The label of a send to a process whose wait was not noted (never: see `park`).
const SENDING: &str = "send to a process";

/// Parks the sender of message `sequence` to `mailbox` (its waker registered).
fn park_sending(
    context: &ProcessContext,
    mailbox: &Arc<Channel>,
    sequence: u64,
    label: impl FnOnce() -> String,
) -> Action {
    park(
        context,
        texts::SEND_TO,
        mailbox,
        || None,
        |_| label(),
        sequence as ffi::lua_KContext,
    )
}

/// `lutra.receive()`; with a timeout, the fallback.
pub(super) struct Receive;

impl MessageCall for Receive {
    const NAME: &'static str = "receive";

    /// With a timeout (an argument), the fallback.
    #[inline(always)]
    unsafe fn accepts(_: *mut lua_State, args: c_int) -> bool {
        args == 0
    }

    #[inline(always)]
    unsafe fn start(_: *mut lua_State, _: c_int, context: &ProcessContext) -> Option<Action> {
        let mailbox = Arc::clone(context.process.mailbox());
        Some(receive_poll::<true>(context, &mailbox))
    }

    #[inline(always)]
    fn resume(context: &ProcessContext, mailbox: &Arc<Channel>, _: ffi::lua_KContext) -> Action {
        receive_poll::<false>(context, mailbox)
    }
}

/// One receive attempt on the caller's own mailbox (`FIRST`: the call's first).
fn receive_poll<const FIRST: bool>(context: &ProcessContext, mailbox: &Arc<Channel>) -> Action {
    let label = |_: Option<&str>| texts::MAILBOX.into();
    receive_or_park::<FIRST>(context, mailbox, texts::MAILBOX, || None, label)
        // A process's mailbox closes only once the process has finished.
        .unwrap_or_else(|| {
            Action::Raise("internal error in Lutra: a running process's mailbox is closed".into())
        })
}
