//! The `lutra` library: Rust functions that never block (the "raw" table, each made
//! the first time a state's Lua code reaches it: [`RawEntry`]), the Lua functions of
//! `prelude.lua` that loop over them and park, and (`native/`) the native fast paths
//! of the channel calls that carry messages, in front of those.
//!
//! # Protocol (a blocking call)
//! 1. The Lua function calls a raw poll, which either completes or registers the
//!    caller's waker with the object and answers "wait".
//! 2. On "wait" the Lua function parks: inside a process it yields the light userdata
//!    [`PARK`] up to the scheduler (through user coroutines, see `prelude.lua`); on a
//!    host thread (the stock `lua` program's main thread) it parks the OS thread.
//! 3. When woken it polls again. Wake-ups may be spurious; every poll re-checks.
//!
//! Blocking never jumps across Rust frames that own anything: the yield is Lua's,
//! from a Lua function, or a native call's `lua_yieldk` made with nothing Rust owns
//! alive (its continuation polls again, `native/mod.rs`).

mod bytecode;
mod channel;
mod host;
mod luaproc;
pub(crate) mod native;
mod process;
mod shared;
pub(crate) mod texts;
mod transfer;

use crate::channel::Waiter;
use crate::channel::handle::CHANNEL_METHODS_KEY;
use crate::process::ProcessContext;
use crate::process::handle::PROCESS_METHODS_KEY;
use mlua::chunk::ChunkMode;
use mlua::{Function, LightUserData, Lua, MultiValue, Table};
use std::ffi::c_void;
use std::sync::OnceLock;

/// The value a process yields to tell the scheduler it waits (`Step::Park`).
pub(crate) const PARK: *mut c_void = std::ptr::dangling_mut::<c_void>();

/// What the native `coroutine.resume` returns after `true` for a coroutine that
/// yielded for the scheduler (preempted, or `lutra.yield`), which yields no values.
pub(crate) const PREEMPTED: *mut c_void = std::ptr::without_provenance_mut::<c_void>(2);

/// Registry key of the function that runs a process's main function with a
/// traceback on error (the body of its main coroutine).
pub(crate) const RUN_KEY: &str = "lutra.run";

/// Room for the raw functions (about 50) a state may make, rather than the rehashes of
/// a table that grows one field at a time.
const RAW_FIELDS: usize = 64;

/// A raw value made on first use: its name in `raw`, and how to make it. A state
/// makes only the raw functions its Lua code reaches (most processes reach a few of
/// the 50), through `raw`'s `__index` ([`raw_table`]); each is then a field of `raw`.
pub(crate) type RawEntry = (&'static str, fn(&Lua) -> mlua::Result<mlua::Value>);

/// The raw values of every module, by module.
const RAW: &[&[RawEntry]] = &[
    host::RAW,
    process::RAW,
    channel::RAW,
    luaproc::RAW,
    shared::RAW,
    texts::RAW,
    transfer::RAW,
    crate::popen::wait::RAW,
];

/// `f` as a Lua function (an entry's maker, see [`RawEntry`]).
pub(crate) fn function<A, R>(
    lua: &Lua,
    f: impl Fn(&Lua, A) -> mlua::Result<R> + mlua::MaybeSend + 'static,
) -> mlua::Result<mlua::Value>
where
    A: mlua::FromLuaMulti,
    R: mlua::IntoLuaMulti,
{
    lua.create_function(f).map(mlua::Value::Function)
}

/// The empty `raw` table, whose `__index` makes the raw value asked for (see
/// [`RawEntry`]) and keeps it; an unknown name is nil.
fn raw_table(lua: &Lua) -> mlua::Result<Table> {
    let raw = lua.create_table_with_capacity(0, RAW_FIELDS)?;
    let make = lua.create_function(|lua, (raw, name): (Table, mlua::Value)| {
        let entry = name.as_string().and_then(|name| {
            let name = name.as_bytes();
            let mut entries = RAW.iter().flat_map(|entries| entries.iter());
            entries.find(|(key, _)| key.as_bytes() == &*name)
        });
        let Some((key, make)) = entry else {
            return Ok(mlua::Value::Nil);
        };
        let value = make(lua)?;
        raw.raw_set(*key, &value)?;
        Ok(value)
    })?;
    let meta = lua.create_table_with_capacity(0, 1)?;
    meta.raw_set("__index", make)?;
    raw.set_metatable(Some(meta))?;
    Ok(raw)
}

/// Registry key of the state's `lutra` table: what every `require "lutra"` returns,
/// also after the program cleared `package.loaded.lutra`.
pub(crate) const LUTRA_KEY: &str = "lutra.module";

/// The runtime's Lua chunk `source` (named `name`) as a function of `lua`: compiled
/// once per OS process, then loaded from its bytecode (with its source name and line
/// information, so positions stay; without the names of locals and upvalues, see
/// `bytecode.rs`), since every new process state loads the same chunks and parsing
/// them was most of the cost of a spawn.
pub(crate) fn precompiled(
    lua: &Lua,
    bytecode: &'static OnceLock<Vec<u8>>,
    source: &str,
    name: &str,
) -> mlua::Result<Function> {
    if let Some(bytes) = bytecode.get() {
        return lua
            .load(&bytes[..])
            .set_name(name)
            .set_mode(ChunkMode::Binary)
            .into_function();
    }
    let function = lua.load(source).set_name(name).into_function()?;
    let dump = function.dump(false);
    let _ = bytecode.set(bytecode::without_local_names(&dump).unwrap_or(dump));
    Ok(function)
}

/// Shared tables and transactions (`shared.lua`), loaded right after the prelude.
fn install_shared(lua: &Lua, raw: &Table, exports: &Table, host: bool) -> mlua::Result<()> {
    static SHARED: OnceLock<Vec<u8>> = OnceLock::new();
    let chunk = precompiled(lua, &SHARED, include_str!("../shared.lua"), "=lutra.shared")?;
    let shared: Table = chunk.call((raw, exports, host))?;
    shared::set_newindex(lua, shared.get("newindex")?)
}

/// Installs `lutra` into a process's state `lua` (whose app data must hold a
/// [`ProcessContext`]): the global `lutra`, `package.loaded.lutra` (and a
/// `package.preload.lutra` that gives the same table again),
/// `package.preload.luaproc`, and the process-aware `print`, `coroutine.resume` and
/// `coroutine.wrap`. Returns the `lutra` table.
pub(crate) fn install(lua: &Lua) -> mlua::Result<Table> {
    install_as(lua, false)
}

/// Installs `lutra` into a host's state (the stock `lua` program that loaded the
/// module): `package.loaded.lutra` and `package.preload.luaproc` only; the host's
/// globals (`print`, `coroutine`) are left as they are.
pub(crate) fn install_host(lua: &Lua) -> mlua::Result<Table> {
    install_as(lua, true)
}

fn install_as(lua: &Lua, host: bool) -> mlua::Result<Table> {
    let debug: Table = lua.globals().get("debug")?;
    lua.set_named_registry_value(
        crate::process::GETUPVALUE_KEY,
        debug.get::<Function>("getupvalue")?,
    )?;
    let raw = raw_table(lua)?;
    shared::install(lua)?;
    static PRELUDE: OnceLock<Vec<u8>> = OnceLock::new();
    let prelude = precompiled(lua, &PRELUDE, include_str!("../prelude.lua"), "=lutra")?;
    let cancel = LightUserData(crate::process::cancel::CANCEL);
    let (park, preempted) = (LightUserData(PARK), LightUserData(PREEMPTED));
    let exports: Table = prelude.call((&raw, park, preempted, host, cancel))?;
    let channel_methods: Table = exports.get("channel")?;
    lua.set_named_registry_value(CHANNEL_METHODS_KEY, &channel_methods)?;
    lua.set_named_registry_value(PROCESS_METHODS_KEY, exports.get::<Table>("process")?)?;
    lua.set_named_registry_value(RUN_KEY, exports.get::<Function>("run")?)?;
    let read_pipe_key = crate::popen::wait::READ_PIPE_KEY
        .to_str()
        .unwrap_or_default();
    lua.set_named_registry_value(read_pipe_key, exports.get::<Function>("read_pipe")?)?;
    let pipe_lines_key = crate::popen::wait::PIPE_LINES_KEY
        .to_str()
        .unwrap_or_default();
    lua.set_named_registry_value(pipe_lines_key, exports.get::<Function>("pipe_lines")?)?;
    let lutra: Table = exports.get("lutra")?;
    transfer::install(lua, &raw, &lutra, &exports.get::<Table>("internal")?)?;
    install_shared(lua, &raw, &exports, host)?;
    // After `shared.lua`, whose wrappers (irrevocable inside `atomic`) become the
    // fallbacks of the native fast paths.
    native::install(
        lua,
        &raw,
        &channel_methods,
        &exports.get::<Table>("process")?,
        &lutra,
        &exports.get::<Table>("internal")?,
        host,
    )?;
    if !host {
        lua.globals().set("lutra", &lutra)?;
    }
    let package: Table = lua.globals().get("package")?;
    package.get::<Table>("loaded")?.set("lutra", &lutra)?;
    lua.set_named_registry_value(LUTRA_KEY, &lutra)?;
    let again = lua.create_function(|lua, ()| lua.named_registry_value::<Table>(LUTRA_KEY))?;
    package.get::<Table>("preload")?.set("lutra", again)?;
    preload_luaproc(lua, &package, &raw, &exports)?;
    Ok(lutra)
}

/// `package.preload.luaproc`: builds luaproc's API (`luaproc.lua`) on first `require`,
/// loading the chunk only then (most processes never require it).
fn preload_luaproc(lua: &Lua, package: &Table, raw: &Table, exports: &Table) -> mlua::Result<()> {
    static LUAPROC: OnceLock<Vec<u8>> = OnceLock::new();
    let (raw, internal) = (raw.clone(), exports.get::<Table>("internal")?);
    let loader = lua.create_function(move |lua, ()| {
        let chunk = precompiled(lua, &LUAPROC, include_str!("../luaproc.lua"), "=luaproc")?;
        chunk.call::<MultiValue>((&raw, &internal))
    })?;
    package.get::<Table>("preload")?.set("luaproc", loader)
}

/// The caller as a waiter: its process id and a waker for its task (or its OS thread
/// outside tasks), counted by the deadlock detector (`wakers::current_waker`).
pub(crate) fn current_waiter(context: &ProcessContext) -> Waiter {
    Waiter {
        id: context.process.id(),
        waker: crate::wakers::current_waker(),
    }
}

/// The `nil, message` pair a raw function returns for a failure that the Lua side
/// raises as a plain string error (errors returned to mlua would reach Lua as
/// userdata, which `string.find` and friends cannot read).
pub(crate) fn failure(lua: &Lua, message: impl std::fmt::Display) -> mlua::Result<MultiValue> {
    let mut out = MultiValue::new();
    out.push_back(mlua::Value::Nil);
    out.push_back(mlua::Value::String(lua.create_string(message.to_string())?));
    Ok(out)
}

/// One value as a raw function's successful answer.
pub(crate) fn success(lua: &Lua, value: impl mlua::IntoLua) -> mlua::Result<MultiValue> {
    let mut out = MultiValue::new();
    out.push_back(value.into_lua(lua)?);
    Ok(out)
}

/// `bad argument #n to 'name' (expected, got type)`, as `luaL_argerror` words it.
pub(crate) fn bad_argument(
    position: usize,
    name: &str,
    expected: &str,
    got: &mlua::Value,
) -> String {
    format!(
        "bad argument #{position} to '{name}' ({expected} expected, got {})",
        got.type_name()
    )
}

#[cfg(test)]
mod tests {
    use super::{RAW, raw_table};
    use mlua::{Lua, Value};

    #[test]
    fn raw_values_are_made_on_first_use_and_kept() {
        let lua = Lua::new();
        let raw = raw_table(&lua).unwrap();
        assert!(raw.raw_get::<Value>("now").unwrap().is_nil(), "made early");
        let now: mlua::Function = raw.get("now").unwrap();
        let kept: mlua::Function = raw.raw_get("now").unwrap();
        assert_eq!(now, kept, "the made function is kept in raw");
        assert!(raw.get::<Value>("no_such_function").unwrap().is_nil());
        assert!(raw.get::<Value>(1).unwrap().is_nil());
        assert_eq!(raw.raw_len(), 0);
    }

    #[test]
    fn every_raw_name_is_unique_and_made() {
        let lua = Lua::new();
        let raw = raw_table(&lua).unwrap();
        let mut names = std::collections::HashSet::new();
        for (name, _) in RAW.iter().flat_map(|entries| entries.iter()) {
            assert!(names.insert(*name), "{name} is listed twice");
            assert!(!raw.get::<Value>(*name).unwrap().is_nil(), "{name}");
        }
    }
}
