//! Raw functions about channels: create, send, poll, close, select.

use crate::api::{RawEntry, current_waiter, failure, function, success, texts};
use crate::channel::{Channel, ChannelHandle, ReceivePoll, SendPoll};
use crate::process::{ProcessContext, ProcessHandle};
use crate::timer;
use crate::transfer;
use crate::transfer::moved;
use mlua::{AnyUserData, Lua, MultiValue, Table};
use std::sync::Arc;

/// The raw functions of this module (made on first use, see [`super::RawEntry`]).
pub(super) const RAW: &[RawEntry] = &[
    ("channel", |lua| {
        function(lua, |lua, capacity: Option<i64>| {
            let capacity = capacity.unwrap_or(0);
            if capacity < 0 {
                return Err(mlua::Error::runtime(format!(
                    "bad argument #1 to 'channel' (capacity must be 0 or more, got {capacity})"
                )));
            }
            ChannelHandle(Arc::new(Channel::new(capacity as usize))).push(lua)
        })
    }),
    ("is_channel", |lua| {
        function(lua, |_, value: mlua::Value| {
            Ok(matches!(&value, mlua::Value::UserData(ud) if ud.is::<ChannelHandle>()))
        })
    }),
    ("channel_send", |lua| function(lua, channel_send)),
    ("channel_send_poll", |lua| function(lua, channel_send_poll)),
    ("channel_withdraw", |lua| function(lua, channel_withdraw)),
    ("channel_poll", |lua| {
        function(
            lua,
            |lua, (ch, deadline, register): (AnyUserData, Option<f64>, bool)| {
                let channel = ch.borrow::<ChannelHandle>()?.0.clone();
                receive_poll(lua, &channel, deadline, register)
            },
        )
    }),
    ("channel_close", |lua| {
        function(lua, |_, ch: AnyUserData| {
            ch.borrow::<ChannelHandle>()?.0.close();
            Ok(())
        })
    }),
    ("select_poll", |lua| function(lua, select_poll)),
    ("leave_channels", |lua| {
        function(lua, |lua, ()| {
            ProcessContext::of(lua)?.process.leave_channels();
            Ok(())
        })
    }),
    ("channel_closed", |lua| {
        function(lua, |_, ch: AnyUserData| Ok(channel_of(&ch)?.is_closed()))
    }),
];

fn channel_of(ch: &AnyUserData) -> mlua::Result<Arc<Channel>> {
    Ok(ch.borrow::<ChannelHandle>()?.0.clone())
}

/// `channel_send(ch, ...)`: exports and queues the message and, unless it was taken
/// at once, registers the caller to be woken when it is received. Returns `true`
/// (sent), its sequence (queued: poll it with `channel_send_poll` once woken), or
/// `nil, message`; `nil, false` when `ch` is not a channel (the caller raises the
/// bad-argument error at its caller's line).
fn channel_send(lua: &Lua, args: MultiValue) -> mlua::Result<MultiValue> {
    let mut args = args.into_iter();
    let channel = match args.next() {
        Some(mlua::Value::UserData(ch)) if ch.is::<ChannelHandle>() => channel_of(&ch)?,
        _ => {
            return Ok(MultiValue::from_vec(vec![
                mlua::Value::Nil,
                mlua::Value::Boolean(false),
            ]));
        }
    };
    let args: Vec<mlua::Value> = args.collect();
    // The moves in the message (`lutra.move`) happen once the send completes.
    let (message, moves) = match transfer::export_pending(lua, &args, |i| format!("argument #{i}"))
    {
        Ok(exported) => exported,
        Err(error) => return failure(lua, error),
    };
    let Ok(sequence) = channel.start_send(message) else {
        return failure(
            lua,
            texts::SEND_CLOSED.fill(&[&texts::channel_name(channel.id())]),
        );
    };
    let context = ProcessContext::of(lua)?;
    context.runtime.counters.note_sent(context.process.id());
    let poll = channel.poll_send(sequence, Some(current_waiter(&context)));
    drop(context);
    match poll {
        SendPoll::Sent => {
            moves.commit(lua)?;
            success(lua, true)
        }
        SendPoll::Wait => {
            moves.defer(lua);
            success(lua, sequence)
        }
        SendPoll::Closed => failure(
            lua,
            texts::CLOSED_BEFORE_RECEIVED.fill(&[&texts::channel_name(channel.id())]),
        ),
    }
}

/// `channel_send_poll(ch, sequence)`: `"sent"` | `"closed"` | `"wait"`.
fn channel_send_poll(lua: &Lua, (ch, sequence): (AnyUserData, u64)) -> mlua::Result<&'static str> {
    let channel = channel_of(&ch)?;
    send_poll_answer(lua, &channel, sequence)
}

/// The Lua send loops' answer for the send `sequence` into `channel` (a channel or a
/// mailbox): `"sent"` (a table moved with it goes now), `"closed"` (the move is
/// forgotten: the table stays the sender's) or `"wait"` (the caller is registered).
pub(super) fn send_poll_answer(
    lua: &Lua,
    channel: &Channel,
    sequence: u64,
) -> mlua::Result<&'static str> {
    let context = ProcessContext::of(lua)?;
    let poll = channel.poll_send(sequence, Some(current_waiter(&context)));
    drop(context);
    Ok(match poll {
        SendPoll::Sent => {
            moved::commit_deferred(lua)?;
            "sent"
        }
        SendPoll::Closed => {
            moved::forget_deferred(lua);
            "closed"
        }
        SendPoll::Wait => "wait",
    })
}

/// `channel_withdraw(ch_or_process, sequence)`: the caller stops waiting in send
/// `sequence` on the channel (or the process's mailbox) before it completed (its
/// blocking call fails): takes the message back, so that nobody receives it. Returns
/// `true` when the send had completed after all (the caller then returns as after a
/// successful send), `false` when it failed (the message is gone).
fn channel_withdraw(lua: &Lua, (target, sequence): (AnyUserData, u64)) -> mlua::Result<bool> {
    let channel = match target.borrow::<ChannelHandle>() {
        Ok(handle) => handle.0.clone(),
        Err(_) => target.borrow::<ProcessHandle>()?.0.mailbox().clone(),
    };
    let sent = channel.withdraw(sequence);
    if sent {
        moved::commit_deferred(lua)?;
    } else {
        moved::forget_deferred(lua);
    }
    Ok(sent)
}

/// One receive attempt: `"ok", ...values` | `"closed"` | `"timeout"` | `"empty"` (no
/// registration asked) | `"wait"` (registered; also with the timer if `deadline`).
/// Any answer but `"wait"` ends the blocking call: the caller leaves the channels it
/// waited on (see [`ended`]).
pub(super) fn receive_poll(
    lua: &Lua,
    channel: &Arc<Channel>,
    deadline: Option<f64>,
    register: bool,
) -> mlua::Result<MultiValue> {
    let context = ProcessContext::of(lua)?;
    let expired = deadline.is_some_and(|d| timer::now() >= d);
    let waiter = (register && !expired).then(|| current_waiter(&context));
    let status = match channel.poll_receive(waiter.clone()) {
        ReceivePoll::Message(message) => {
            context.process.leave_channels();
            drop(context);
            return delivered(lua, None, &message);
        }
        ReceivePoll::Closed => "closed",
        ReceivePoll::Empty if expired => "timeout",
        ReceivePoll::Empty if waiter.is_none() => "empty",
        ReceivePoll::Empty => {
            context.process.note_receiving(channel);
            if let (Some(deadline), Some(waiter)) = (deadline, waiter) {
                context.runtime.timer.wake_at(deadline, waiter.waker);
            }
            return status_only(lua, "wait");
        }
    };
    ended(lua, &context, status)
}

/// `select_poll(channels, deadline, register)`: takes a message from a ready channel,
/// trying them in a random order so that ready channels are served fairly:
/// `"ok", ch, ...values` | `"closed"` (all closed) | `"timeout"` | `"wait"`. As for
/// [`receive_poll`], any answer but `"wait"` leaves every channel waited on.
fn select_poll(
    lua: &Lua,
    (channels, deadline, register): (Table, Option<f64>, bool),
) -> mlua::Result<MultiValue> {
    let handles: Vec<AnyUserData> = channels.sequence_values().collect::<mlua::Result<_>>()?;
    let list: Vec<Arc<Channel>> = handles
        .iter()
        .map(channel_of)
        .collect::<mlua::Result<_>>()?;
    let context = ProcessContext::of(lua)?;
    // A random order (not a random starting point: a closed channel would hand its
    // turn to its neighbour) makes every ready channel equally likely to be served.
    let mut order: Vec<usize> = (0..list.len()).collect();
    fastrand::shuffle(&mut order);
    let mut all_closed = true;
    for index in order {
        match list[index].poll_receive(None) {
            ReceivePoll::Message(message) => {
                context.process.leave_channels();
                drop(context);
                return delivered(lua, Some(&handles[index]), &message);
            }
            ReceivePoll::Closed => {}
            ReceivePoll::Empty => all_closed = false,
        }
    }
    let status = if all_closed {
        "closed"
    } else if deadline.is_some_and(|d| timer::now() >= d) {
        "timeout"
    } else if register {
        let waiter = current_waiter(&context);
        for (index, channel) in list.iter().enumerate() {
            match channel.poll_receive(Some(waiter.clone())) {
                ReceivePoll::Message(message) => {
                    // A message arrived between the two passes: hand it out now.
                    context.process.leave_channels();
                    drop(context);
                    return delivered(lua, Some(&handles[index]), &message);
                }
                ReceivePoll::Empty => context.process.note_receiving(channel),
                ReceivePoll::Closed => {}
            }
        }
        if let Some(deadline) = deadline {
            context.runtime.timer.wake_at(deadline, waiter.waker);
        }
        return status_only(lua, "wait");
    } else {
        "empty"
    };
    ended(lua, &context, status)
}

/// A blocking receive or select ended without a message (`status`): the caller leaves
/// the channels it waited on, so a wake-up it was handed passes on.
fn ended(lua: &Lua, context: &ProcessContext, status: &str) -> mlua::Result<MultiValue> {
    context.process.leave_channels();
    status_only(lua, status)
}

/// `status` alone as the answer.
fn status_only(lua: &Lua, status: &str) -> mlua::Result<MultiValue> {
    let mut out = MultiValue::new();
    out.push_back(mlua::Value::String(lua.create_string(status)?));
    Ok(out)
}

/// `"ok", [ch,] ...values` for a received message.
fn delivered(
    lua: &Lua,
    from: Option<&AnyUserData>,
    message: &transfer::Message,
) -> mlua::Result<MultiValue> {
    {
        let context = ProcessContext::of(lua)?;
        context.runtime.counters.note_received(context.process.id());
    }
    let mut values = transfer::import(lua, message)?;
    if let Some(handle) = from {
        values.push_front(mlua::Value::UserData(handle.clone()));
    }
    values.push_front(mlua::Value::String(lua.create_string("ok")?));
    Ok(values)
}
