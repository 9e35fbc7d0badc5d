//! The steps of a native message call on a channel, shared by every call: start and
//! resume a send, try a receive, park the caller (noting its wait as the Lua loop does,
//! `channel/core.rs`'s protocol), and end a wait that cannot go on. Each returns the
//! [`Action`] the call then performs.

use super::handles::waker;
use super::perform::{Action, Answer};
use super::scalar;
use crate::api::texts;
use crate::channel::{Channel, ReceivePoll, SendPoll};
use crate::process::ProcessContext;
use crate::process::state::NativeWait;
use crate::transfer::Message;
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;
use std::sync::Arc;

/// A send's first attempt: the message of scalars at stack positions `2..=args`
/// offered on `channel` for the caller (counted once accepted). The call answers
/// `sent` once the message is queued or handed to a waiting receiver; it is parked by
/// `park_sending(sequence)` (its waker registered) while the message waits to be
/// received; a closed channel answers `closed()`. `None`, having done nothing, when a
/// value is not a scalar or a handle (the fallback answers).
///
/// # Safety
/// As [`scalar::export`]; `state` is a process's running thread.
#[inline(always)]
pub(super) unsafe fn start_send(
    state: *mut lua_State,
    args: c_int,
    context: &ProcessContext,
    channel: &Channel,
    sent: Answer,
    closed: impl FnOnce() -> Option<Action>,
    park_sending: impl FnOnce(u64) -> Action,
) -> Option<Action> {
    // SAFETY: the caller's contract.
    let message = unsafe { scalar::export(state, 2, args) }?;
    let Ok(started) = channel.begin_send(message, waker(context)) else {
        return closed();
    };
    context.runtime.counters.note_sent(context.process.id());
    Some(if started.sent {
        Action::Return(sent)
    } else {
        park_sending(started.sequence)
    })
}

/// A send's next attempt once its process was woken: message `ctx` was received
/// (the call answers `sent`), still waits (parked again by `park_sending(sequence)`),
/// or its channel was closed first (`closed()`).
#[inline(always)]
pub(super) fn resume_send(
    context: &ProcessContext,
    channel: &Channel,
    ctx: ffi::lua_KContext,
    sent: Answer,
    closed: impl FnOnce() -> Action,
    park_sending: impl FnOnce(u64) -> Action,
) -> Action {
    let sequence = ctx as u64;
    match channel.poll_send_with(sequence, waker(context)) {
        SendPoll::Sent => Action::Return(sent),
        SendPoll::Closed => closed(),
        SendPoll::Wait => park_sending(sequence),
    }
}

/// Parks the caller on `channel` (`what` says how; `name` is its luaproc name, if
/// any): notes the wait, with its label built by `label` only when the last wait was
/// not the same, and keeps the channel in the context for the continuation.
#[inline]
pub(super) fn park(
    context: &ProcessContext,
    what: &'static str,
    channel: &Arc<Channel>,
    name: impl FnOnce() -> Option<Arc<str>>,
    label: impl FnOnce(Option<&str>) -> String,
    ctx: ffi::lua_KContext,
) -> Action {
    {
        let mut last = context.native_wait.borrow_mut();
        let wait = match &mut *last {
            Some(wait) if wait.channel_id == channel.id() && same(wait.what, what) => wait,
            last => {
                let name = name();
                last.insert(NativeWait {
                    what,
                    channel_id: channel.id(),
                    label: label(name.as_deref()).into(),
                    name,
                })
            }
        };
        context.process.note_waiting_on(&wait.label);
    }
    context.parked.set(Some(channel.clone()));
    Action::Park { ctx }
}

/// Whether two waits' kinds are the same: by address first (each is a literal of one
/// call site), by content otherwise.
fn same(a: &'static str, b: &'static str) -> bool {
    std::ptr::eq(a, b) || a == b
}

/// One receive attempt on `channel`: the message taken, or the caller parked (as by
/// [`park`], noted as receiving, registered to take a message handed to it: the
/// call ends only by taking one or by leaving); `None` when the channel is closed
/// and drained. `FIRST`: the call's first attempt, before it registered anywhere
/// (`Channel::poll_receive_direct_first`).
#[inline]
pub(super) fn receive_or_park<const FIRST: bool>(
    context: &ProcessContext,
    channel: &Arc<Channel>,
    what: &'static str,
    name: impl FnOnce() -> Option<Arc<str>>,
    label: impl FnOnce(Option<&str>) -> String,
) -> Option<Action> {
    let (id, waker) = (context.process.id(), waker(context));
    let polled = if FIRST {
        channel.poll_receive_direct_first(id, waker)
    } else {
        channel.poll_receive_direct(id, waker)
    };
    Some(match polled {
        ReceivePoll::Message(message) => took(context, channel, message),
        ReceivePoll::Closed => return None,
        ReceivePoll::Empty => {
            context.process.note_receiving(channel);
            park(context, what, channel, name, label, 0)
        }
    })
}

/// A receive took `message` from `channel` (giving up its registration there): the
/// process leaves the other channels it waited on, and the message is answered (its
/// values pushed, or imported by `take_pending`).
#[inline(always)]
fn took(context: &ProcessContext, channel: &Channel, message: Message) -> Action {
    context.process.took_from(channel);
    context.runtime.counters.note_received(context.process.id());
    if scalar::fits(&message) {
        return Action::Return(Answer::Values(message));
    }
    *context.pending.borrow_mut() = Some(message);
    Action::Return(Answer::Pending)
}

/// The luaproc name of the channel the process parked on (its `native_wait`'s), or
/// an empty name.
#[inline]
pub(super) fn parked_name(context: &ProcessContext) -> Arc<str> {
    match &*context.native_wait.borrow() {
        Some(NativeWait {
            name: Some(name), ..
        }) => name.clone(),
        _ => "".into(),
    }
}

/// The label of the wait the process parked in (its `native_wait`'s), or `default`.
pub(super) fn parked_label(context: &ProcessContext, default: &str) -> Arc<str> {
    match &*context.native_wait.borrow() {
        Some(wait) => wait.label.clone(),
        None => default.into(),
    }
}

/// The error of a wait resumed with `CANNOT` (the Lua loop's `park`), or with
/// `CANCEL` (the cancellation's error, `process/cancel.rs`): the process no longer
/// waits, and leaves the channels it registered on.
#[cold]
pub(super) fn cannot_wait(context: &ProcessContext) -> Action {
    let label = parked_label(context, "a channel");
    context.process.set_waiting_on(None);
    context.process.leave_channels();
    if let Some(message) = crate::process::cancel::pending_message(context) {
        return Action::Raise(message.to_string());
    }
    Action::Raise(texts::CANNOT_REACH_SCHEDULER.fill(&[&label]))
}

/// [`cannot_wait`] for a send of message `sequence` on `channel`: the message is
/// taken back (a send that fails delivers nothing), unless the send completed after
/// all, which then answers `sent`.
#[cold]
pub(super) fn cannot_send(
    context: &ProcessContext,
    channel: &Channel,
    sequence: ffi::lua_KContext,
    sent: Answer,
) -> Action {
    if channel.withdraw(sequence as u64) {
        context.process.set_waiting_on(None);
        return Action::Return(sent);
    }
    cannot_wait(context)
}
