//! Raw functions about processes: spawn, join, mailboxes, cancellation, monitors.

use crate::api::{RawEntry, bad_argument, current_waiter, failure, function, success, texts};
use crate::channel::SendPoll;
use crate::process::{Code, Outcome, ProcessContext, ProcessCore, ProcessHandle};
use crate::runtime::Watched;
use crate::transfer::{self, Value};
use mlua::{AnyUserData, Lua, MultiValue};
use std::sync::Arc;

/// The raw functions of this module (made on first use, see [`super::RawEntry`]).
pub(super) const RAW: &[RawEntry] = &[
    ("spawn", |lua| {
        function(lua, |lua, (code, origin, args)| {
            spawn(lua, code, origin, args, Spawn::Plain)
        })
    }),
    ("spawn_linked", |lua| {
        function(lua, |lua, (code, origin, args)| {
            spawn(lua, code, origin, args, Spawn::Linked)
        })
    }),
    ("spawn_monitored", |lua| {
        function(lua, |lua, (code, origin, args)| {
            spawn(lua, code, origin, args, Spawn::Monitored)
        })
    }),
    ("cancel", |lua| function(lua, cancel)),
    ("cancel_message", |lua| {
        function(lua, |lua, ()| {
            let context = ProcessContext::of(lua)?;
            Ok(context.process.deliver_cancel().to_string())
        })
    }),
    ("monitor", |lua| function(lua, monitor)),
    ("checked_yield", |lua| {
        // SAFETY: `checked_yield` follows the lua_CFunction protocol (`cancel.rs`).
        let checked = unsafe { lua.create_c_function(crate::process::cancel::checked_yield) };
        checked.map(mlua::Value::Function)
    }),
    ("process_status", |lua| {
        function(lua, |_, p: AnyUserData| {
            Ok(p.borrow::<ProcessHandle>()?.0.status())
        })
    }),
    ("cancel_slices", |lua| {
        function(lua, |_, p: AnyUserData| {
            Ok(p.borrow::<ProcessHandle>()?.0.slices_after_cancel())
        })
    }),
    ("join_poll", |lua| function(lua, join_poll)),
    ("process_send", |lua| function(lua, process_send)),
    ("process_send_poll", |lua| function(lua, process_send_poll)),
    ("mailbox_poll", |lua| function(lua, mailbox_poll)),
    ("self", |lua| {
        function(lua, |lua, ()| {
            let context = ProcessContext::of(lua)?;
            ProcessHandle(context.process.clone()).push(lua)
        })
    }),
    ("process_id", |lua| {
        function(lua, |_, p: AnyUserData| {
            Ok(p.borrow::<ProcessHandle>()?.0.id())
        })
    }),
];

/// How a spawn watches the new process, from before it starts.
#[derive(Clone, Copy)]
pub(super) enum Spawn {
    /// `lutra.spawn`: not at all.
    Plain,
    /// `lutra.spawn_link`: linked with the caller.
    Linked,
    /// `lutra.spawn_monitor`: monitored by the caller.
    Monitored,
}

impl Spawn {
    /// The Lua function's name, for errors.
    fn name(self) -> &'static str {
        match self {
            Spawn::Plain => "spawn",
            Spawn::Linked => "spawn_link",
            Spawn::Monitored => "spawn_monitor",
        }
    }
}

/// `spawn(fn_or_source, where, ...)`: exports the code and arguments, starts the
/// process (linked with or monitored by the caller before it starts, as `how` says).
fn spawn(
    lua: &Lua,
    code: mlua::Value,
    origin: String,
    args: MultiValue,
    how: Spawn,
) -> mlua::Result<MultiValue> {
    let name = how.name();
    let code = match &code {
        // Named by its text, as `load` names a string chunk: errors show
        // `[string "..."]:line:` (the spawn site is the process's origin).
        mlua::Value::String(source) => Code::Script {
            name: source.to_string_lossy(),
            text: source.as_bytes().to_vec(),
            args: Vec::new(),
        },
        mlua::Value::Function(_) => {
            match transfer::export(lua, std::slice::from_ref(&code), |_| "argument #1".into()) {
                Ok(exported) => match exported.values.into_iter().next() {
                    Some(Value::Function(function)) => Code::Function(function),
                    _ => {
                        return failure(
                            lua,
                            format!("bad argument #1 to '{name}' (isolated function expected)"),
                        );
                    }
                },
                Err(error) => return failure(lua, error),
            }
        }
        other => {
            return failure(
                lua,
                bad_argument(1, name, "function or source string", other),
            );
        }
    };
    start(lua, code, origin, args, how)
}

/// Exports the arguments and starts the process running `code` (linked with or
/// monitored by the caller before it starts, as `how` says); its handle, or `nil,
/// message`.
pub(super) fn start(
    lua: &Lua,
    code: Code,
    origin: String,
    args: MultiValue,
    how: Spawn,
) -> mlua::Result<MultiValue> {
    let args: Vec<mlua::Value> = args.into_iter().collect();
    let message = match transfer::export(lua, &args, |i| format!("argument #{}", i + 1)) {
        Ok(message) => message,
        Err(error) => return failure(lua, error),
    };
    let context = ProcessContext::of(lua)?;
    let watched = match how {
        Spawn::Plain => Watched::Not,
        Spawn::Linked => Watched::LinkedWith(&context.process),
        Spawn::Monitored => Watched::MonitoredBy(&context.process),
    };
    let core = context
        .runtime
        .spawn_watched(code, message, origin, watched);
    drop(context);
    success(lua, ProcessHandle(core).push(lua)?)
}

/// `join_poll(p, register)`: `"done", ...results` | `"failed", message` | `"wait"`.
fn join_poll(lua: &Lua, (process, register): (AnyUserData, bool)) -> mlua::Result<MultiValue> {
    let core = process.borrow::<ProcessHandle>()?.0.clone();
    let context = ProcessContext::of(lua)?;
    let waiter = register.then(|| current_waiter(&context));
    let mut out = MultiValue::new();
    match core.poll_join(waiter) {
        None => out.push_back(mlua::Value::String(lua.create_string("wait")?)),
        Some((Outcome::Failed(error), true)) => {
            out.push_back(mlua::Value::String(lua.create_string("cancelled")?));
            out.push_back(mlua::Value::String(lua.create_string(&error)?));
        }
        Some((Outcome::Finished(message), _)) => {
            out = transfer::import(lua, &message)?;
            out.push_front(mlua::Value::String(lua.create_string("done")?));
        }
        Some((Outcome::Failed(error), false)) => {
            out.push_back(mlua::Value::String(lua.create_string("failed")?));
            out.push_back(mlua::Value::String(lua.create_string(&error)?));
        }
        Some((Outcome::Running, _)) => unreachable!("poll_join returns only ended outcomes"),
    }
    Ok(out)
}

/// `process_send(p, ...)`: queues a message in `p`'s mailbox; returns its sequence,
/// or `nil, message`.
fn process_send(lua: &Lua, (process, args): (AnyUserData, MultiValue)) -> mlua::Result<MultiValue> {
    let core = process.borrow::<ProcessHandle>()?.0.clone();
    let args: Vec<mlua::Value> = args.into_iter().collect();
    // The moves in the message (`lutra.move`) happen once the send completes.
    let (message, moves) = match transfer::export_pending(lua, &args, |i| format!("argument #{i}"))
    {
        Ok(exported) => exported,
        Err(error) => return failure(lua, error),
    };
    match core.mailbox().start_send(message) {
        Ok(sequence) => {
            match core.mailbox().poll_send(sequence, None) {
                SendPoll::Sent => moves.commit(lua)?,
                _ => moves.defer(lua),
            }
            {
                let context = ProcessContext::of(lua)?;
                context.runtime.counters.note_sent(context.process.id());
            }
            success(lua, sequence)
        }
        Err(_) => failure(
            lua,
            texts::PROCESS_FINISHED.fill(&[&texts::label(
                texts::SEND_TO,
                format_args!("process#{}", core.id()),
            )]),
        ),
    }
}

/// `process_send_poll(p, sequence)`: `"sent"` | `"closed"` | `"wait"`.
fn process_send_poll(
    lua: &Lua,
    (process, sequence): (AnyUserData, u64),
) -> mlua::Result<&'static str> {
    let core = process.borrow::<ProcessHandle>()?.0.clone();
    super::channel::send_poll_answer(lua, core.mailbox(), sequence)
}

/// `mailbox_poll(deadline, register)`: the caller's own mailbox, as `channel_poll`.
fn mailbox_poll(lua: &Lua, (deadline, register): (Option<f64>, bool)) -> mlua::Result<MultiValue> {
    let context = ProcessContext::of(lua)?;
    let mailbox = Arc::clone(context.process.mailbox());
    drop(context);
    super::channel::receive_poll(lua, &mailbox, deadline, register)
}

/// The process whose handle is `value`, or `luaL_argerror`'s message for argument 1
/// of `name`.
fn process_of(value: &mlua::Value, name: &str) -> Result<Arc<ProcessCore>, String> {
    if let mlua::Value::UserData(p) = value
        && let Ok(handle) = p.borrow::<ProcessHandle>()
    {
        return Ok(handle.0.clone());
    }
    let got = match value {
        mlua::Value::Integer(_) | mlua::Value::Number(_) => "number",
        other => other.type_name(),
    };
    Err(format!(
        "bad argument #1 to '{name}' (process expected, got {got})"
    ))
}

/// `cancel(p, reason)`: `asked, itself` (see `Process.cancel` in `prelude.lua`), or
/// `nil, message` for a `p` that is no process.
fn cancel(lua: &Lua, (p, reason): (mlua::Value, Option<String>)) -> mlua::Result<MultiValue> {
    let core = match process_of(&p, "cancel") {
        Ok(core) => core,
        Err(error) => return failure(lua, error),
    };
    let asked = core.cancel(reason.as_deref());
    let context = ProcessContext::of(lua)?;
    let itself = Arc::ptr_eq(&core, &context.process) && core.cancel_requested();
    let mut out = MultiValue::new();
    out.push_back(mlua::Value::Boolean(asked));
    out.push_back(mlua::Value::Boolean(itself));
    Ok(out)
}

/// `monitor(p)`: the caller is told when `p` ends (`process/watch.rs`); `true`, or
/// `nil, message` for a `p` that is no process.
fn monitor(lua: &Lua, p: mlua::Value) -> mlua::Result<MultiValue> {
    let core = match process_of(&p, "monitor") {
        Ok(core) => core,
        Err(error) => return failure(lua, error),
    };
    let context = ProcessContext::of(lua)?;
    core.add_monitor(&context.process);
    success(lua, true)
}
