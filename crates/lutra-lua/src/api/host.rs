//! Raw functions about the caller itself: where it runs, parking a host thread, what
//! it waits on, preemption, clocks, output.

use crate::api::{RawEntry, current_waiter, function, texts};
use crate::process::ProcessContext;
use crate::process::preempt;
use crate::process::state::LastWait;
use crate::timer;
use mlua::{Function, Lua, LuaString, MultiValue, Value};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The raw functions of this module (made on first use, see [`super::RawEntry`]).
pub(super) const RAW: &[RawEntry] = &[
    ("in_task", |lua| {
        function(lua, |_, ()| Ok(lutra_sched::current_task().is_some()))
    }),
    ("park_thread", |lua| function(lua, park_thread)),
    ("note_wait", |lua| function(lua, note_wait)),
    ("prepare_park", |lua| function(lua, prepare_park)),
    ("wait_label", |lua| {
        function(lua, |_, (what, object): (LuaString, Value)| {
            wait_label(&what, &object)
        })
    }),
    ("request_yield", |lua| function(lua, request_yield)),
    ("resume", |lua| {
        // SAFETY: `resume` follows the lua_CFunction protocol (see `preempt.rs`).
        let resume = unsafe { lua.create_c_function(preempt::resume) };
        resume.map(Value::Function)
    }),
    ("now", |lua| function(lua, |_, ()| Ok(timer::now()))),
    ("workers", |lua| {
        function(lua, |lua, ()| {
            Ok(ProcessContext::of(lua)?.runtime.sched.workers())
        })
    }),
    ("wake_at", |lua| function(lua, wake_at)),
    ("write_line", |lua| function(lua, write_line)),
    ("exit", |lua| function(lua, exit)),
];

/// How long a host thread parks before it looks for a deadlock again.
const HOST_DEADLOCK_CHECK: Duration = Duration::from_millis(100);

/// Parks the calling OS thread (not a task) until a waker registered by it fires, or
/// for a while (the caller polls again). Returns a deadlock report when nothing can
/// ever wake it (proven by the runtime's liveness count, see `runtime.rs`).
/// A host asked to cancel (linked to a process that failed, or cancelled by one)
/// gets the cancellation's message instead, at once or when it wakes (within
/// `HOST_DEADLOCK_CHECK`: a host thread leaves no waker for a cancellation).
fn park_thread(lua: &Lua, what: String) -> mlua::Result<Option<String>> {
    let context = ProcessContext::of(lua)?;
    if let Some(message) = crate::process::cancel::pending_message(&context) {
        return Ok(Some(message.to_string()));
    }
    context.process.set_waiting_on(Some(what.as_str().into()));
    let report = context.runtime.park_host(HOST_DEADLOCK_CHECK);
    context.process.set_waiting_on(None);
    if let Some(message) = crate::process::cancel::pending_message(&context) {
        return Ok(Some(message.to_string()));
    }
    Ok(report.map(|report| {
        context.runtime.note_host_deadlock(&report);
        format!("deadlock: the host waits on {what} and nothing can wake it\n{report}")
    }))
}

/// Marks the caller's next bare yield as meant for the scheduler (as a preemption is).
fn request_yield(lua: &Lua, (): ()) -> mlua::Result<()> {
    ProcessContext::of(lua)?
        .preempted
        .store(true, Ordering::Relaxed);
    Ok(())
}

/// `prepare_park(what, object)`: whether the caller may park its task to wait on
/// `what` followed by `object`: `nil` when it may (the wait is noted, as by
/// `note_wait`), `"atomic"` inside `lutra.atomic`, `"host"` on a host thread (not a
/// task). One call where a blocking call would otherwise make three.
fn prepare_park(
    lua: &Lua,
    (what, object): (LuaString, Value),
) -> mlua::Result<Option<&'static str>> {
    if crate::atomic::TxContext::of(lua)?.running.get() {
        return Ok(Some("atomic"));
    }
    if lutra_sched::current_task().is_none() {
        return Ok(Some("host"));
    }
    note_wait(lua, (Some(what), object))?;
    Ok(None)
}

/// The label of a wait on `what` followed by `object` (a channel, a process, a
/// channel's name, or nothing), as deadlock reports and errors show it.
fn wait_label(what: &LuaString, object: &Value) -> mlua::Result<String> {
    let what = what.to_string_lossy();
    Ok(match object {
        Value::Nil => what,
        Value::String(name) => texts::named_label(&what, &name.to_string_lossy()),
        other => texts::label(&what, other.to_string()?),
    })
}

/// `note_wait(what, object)`: the process is about to wait on `what` followed by
/// `object` (`prelude.lua`'s `label`); `note_wait(nil)`: it no longer waits. The text
/// is built only when the pair differs from the previous one (a process that waits in
/// a loop on one channel builds it once).
fn note_wait(lua: &Lua, (what, object): (Option<LuaString>, Value)) -> mlua::Result<()> {
    let context = ProcessContext::of(lua)?;
    let Some(what) = what else {
        context.process.set_waiting_on(None);
        return Ok(());
    };
    let mut last = context.last_wait.borrow_mut();
    let text = match &*last {
        Some(last) if last.what == what && last.object == object => last.text.clone(),
        _ => {
            let text: Arc<str> = wait_label(&what, &object)?.into();
            *last = Some(LastWait {
                what,
                object,
                text: text.clone(),
            });
            text
        }
    };
    context.process.set_waiting_on(Some(text));
    Ok(())
}

/// Wakes the caller at `deadline` (seconds on `now`'s clock).
fn wake_at(lua: &Lua, deadline: f64) -> mlua::Result<()> {
    let context = ProcessContext::of(lua)?;
    context
        .runtime
        .timer
        .wake_at(deadline, current_waiter(&context).waker);
    Ok(())
}

/// `exit(status)`: `os.exit` in a process (see `RuntimeShared::exit_now`).
fn exit(lua: &Lua, status: i32) -> mlua::Result<()> {
    let runtime = ProcessContext::of(lua)?.runtime.clone();
    runtime.exit_now(status)
}

/// `print`: converts every argument with `tostring` and writes one line at once.
fn write_line(lua: &Lua, args: MultiValue) -> mlua::Result<()> {
    let tostring: Function = lua.globals().get("tostring")?;
    let mut line = Vec::new();
    for (index, value) in args.into_iter().enumerate() {
        if index > 0 {
            line.push(b'\t');
        }
        let text: mlua::LuaString = tostring.call(value)?;
        line.extend_from_slice(&text.as_bytes());
    }
    line.push(b'\n');
    ProcessContext::of(lua)?.runtime.write_line(&line);
    Ok(())
}
