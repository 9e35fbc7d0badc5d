//! Raw functions behind luaproc's API (`luaproc.lua`): named channels, the number of
//! workers, waiting for every process, the recycle limit. None of them blocks.

use crate::api::{RawEntry, current_waiter, failure, function, success, texts};
use crate::channel::ChannelHandle;
use crate::process::ProcessContext;
use mlua::{Lua, LuaString, MultiValue};
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
];

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
