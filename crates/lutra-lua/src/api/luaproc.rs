//! Raw functions behind luaproc's API (`luaproc.lua`): named channels, the number of
//! workers, waiting for every process, the recycle limit, spawning a `newproc`
//! process. None of them blocks.

use crate::api::{RawEntry, current_waiter, failure, function, success, texts};
use crate::channel::ChannelHandle;
use crate::process::{Code, ProcessContext};
use mlua::{Lua, LuaString, MultiValue};
use std::sync::OnceLock;
use std::sync::atomic::Ordering;

/// The raw functions of this module (made on first use, see [`super::RawEntry`]);
/// `raw.workers` is `host.rs`'s.
pub(super) const RAW: &[RawEntry] = &[
    ("lp_newchannel", |lua| function(lua, new_channel)),
    ("lp_delchannel", |lua| function(lua, delete_channel)),
    ("lp_channel", |lua| function(lua, named_channel)),
    ("set_workers", |lua| function(lua, set_workers)),
    ("max_workers", |_| {
        Ok(mlua::Value::Integer(crate::options::MAX_WORKERS as i64))
    }),
    ("wait_poll", |lua| function(lua, wait_poll)),
    ("set_recycle", |lua| function(lua, set_recycle)),
    ("lp_spawn", |lua| function(lua, spawn)),
];

/// What a process created by `newproc` runs first: the global `luaproc` (as luaproc
/// registers it in every new state), then the code (`kind`, `code`, `name` and
/// `upvalues` from `luaproc.newproc`). A chunk named by its text, as a string given
/// to `lutra.spawn` is.
const BOOT: &str = r#"luaproc = require "luaproc"
local kind, code, name, upvalues = ...
local main = assert(load(code, name, kind == "function" and "b" or "t"))
if upvalues then
  for i = 1, upvalues.n do
    if upvalues.env[i] then
      debug.setupvalue(main, i, _ENV)
    else
      debug.setupvalue(main, i, upvalues.values[i])
    end
  end
end
return main()
"#;

/// `lp_spawn(where, kind, code, name, upvalues)`: starts a `newproc` process running
/// [`BOOT`] with the other arguments; its handle, or `nil, message`. The chunk is
/// compiled once per OS process (by the first state that spawns one), and each child
/// loads its bytecode instead of parsing it again.
fn spawn(lua: &Lua, (origin, args): (String, MultiValue)) -> mlua::Result<MultiValue> {
    static BYTECODE: OnceLock<Vec<u8>> = OnceLock::new();
    let bytecode = match BYTECODE.get() {
        Some(bytecode) => bytecode,
        None => {
            let function = lua.load(BOOT).set_name(BOOT).into_function()?;
            BYTECODE.get_or_init(|| function.dump(false))
        }
    };
    let code = Code::Compiled {
        name: BOOT,
        bytecode,
    };
    super::process::start(lua, code, origin, args, super::process::Spawn::Plain)
}

fn display(name: &LuaString) -> String {
    name.to_string_lossy()
}

/// `lp_newchannel(name)`: `true` | `nil, "channel 'name' already exists"`.
fn new_channel(lua: &Lua, name: LuaString) -> mlua::Result<MultiValue> {
    let context = ProcessContext::of(lua)?;
    if context.runtime.named_channels.create(&name.as_bytes()) {
        drop(context);
        success(lua, true)
    } else {
        drop(context);
        failure(lua, format!("channel '{}' already exists", display(&name)))
    }
}

/// `lp_delchannel(name)`: `true` | `nil, "channel 'name' does not exist"`.
fn delete_channel(lua: &Lua, name: LuaString) -> mlua::Result<MultiValue> {
    let context = ProcessContext::of(lua)?;
    let deleted = context.runtime.named_channels.delete(&name.as_bytes());
    drop(context);
    if deleted {
        success(lua, true)
    } else {
        failure(lua, texts::LUAPROC_NO_CHANNEL.fill(&[&display(&name)]))
    }
}

/// `lp_channel(name)`: the channel's handle | `nil, "channel 'name' does not exist"`.
fn named_channel(lua: &Lua, name: LuaString) -> mlua::Result<MultiValue> {
    let context = ProcessContext::of(lua)?;
    let channel = context.runtime.named_channels.get(&name.as_bytes());
    drop(context);
    match channel {
        Some(channel) => success(lua, ChannelHandle(channel).push(lua)?),
        None => failure(lua, texts::LUAPROC_NO_CHANNEL.fill(&[&display(&name)])),
    }
}

/// `set_workers(n)`: starts or retires workers so that `n` run.
fn set_workers(lua: &Lua, workers: usize) -> mlua::Result<()> {
    ProcessContext::of(lua)?.runtime.sched.set_workers(workers);
    Ok(())
}

/// `wait_poll()`: `true` once every process other than the caller has finished;
/// otherwise registers the caller and returns `false`.
fn wait_poll(lua: &Lua, (): ()) -> mlua::Result<bool> {
    let context = ProcessContext::of(lua)?;
    let in_task = lutra_sched::current_task().is_some();
    Ok(context
        .runtime
        .poll_all_finished(in_task, Some(current_waiter(&context))))
}

/// `set_recycle(n)`: finished states kept for reuse from now on.
fn set_recycle(lua: &Lua, limit: usize) -> mlua::Result<()> {
    ProcessContext::of(lua)?
        .runtime
        .recycle_limit
        .store(limit, Ordering::Relaxed);
    Ok(())
}
