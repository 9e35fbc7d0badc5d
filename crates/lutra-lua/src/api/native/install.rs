//! Making the native closures: each stands in front of the Lua function it replaces
//! in the common case (its fallback), with the module's upvalues; in a host's state
//! each is [`host_fallback`]. Also guards `debug.setuservalue` in a process's state,
//! and puts there the registry's anchor of the last handle called on (`handles.rs`).

use super::call::entry;
use super::handles::{guard_setuservalue, prepare_last_handle};
use super::perform::host_fallback;
use super::{channel, luaproc, mailbox};
use crate::process::ProcessContext;
use mlua::ffi;
use mlua::{Function, Lua, MultiValue, Table};
use std::ffi::c_int;

/// A native closure of `function` with the module's upvalues.
fn closure(
    lua: &Lua,
    function: ffi::lua_CFunction,
    upvalues: MultiValue,
) -> mlua::Result<Function> {
    let count = upvalues.len() as c_int;
    // SAFETY: mlua pushes the upvalues onto a protected call's stack; the closure
    // takes them.
    unsafe {
        lua.exec_raw(upvalues, |state| {
            ffi::lua_pushcclosure(state, function, count);
        })
    }
}

/// Registry key of the table of what every native closure shares: `cannot`,
/// `take_pending` and `named` (the cache of named channels).
const SHARED_KEY: &str = "lutra.native";

/// A native closure of `function` in front of `fallback` (of [`host_fallback`] in a
/// host's state, `host`), its upvalues taken from `shared` (the table under
/// [`SHARED_KEY`]); with the named-channel cache when `named`.
fn native(
    lua: &Lua,
    shared: &Table,
    function: ffi::lua_CFunction,
    fallback: Function,
    named: bool,
    host: bool,
) -> mlua::Result<Function> {
    let function = if host { host_fallback } else { function };
    let mut upvalues = MultiValue::new();
    upvalues.push_back(mlua::Value::Function(fallback));
    upvalues.push_back(shared.get("cannot")?);
    upvalues.push_back(shared.get("take_pending")?);
    if named {
        upvalues.push_back(shared.get("named")?);
    }
    closure(lua, function, upvalues)
}

/// Puts the native `send` and `receive` in front of the channel methods `methods`,
/// the native `send` in front of the process methods `process_methods` and the
/// native `receive` in front of `lutra.receive`, and gives `raw` what `luaproc.lua`
/// needs for its own: `raw.lp_named`, the cache of named channels (name → handle,
/// weak values), and `raw.lp_native(kind, fallback)`; `internal` is the prelude's
/// (its `cannot`). In a host's state (`host`) every native closure is
/// [`host_fallback`]: the natives find the caller's context in the extra space of the
/// running thread, which a host's threads leave undefined (`process/state.rs`).
pub(crate) fn install(
    lua: &Lua,
    raw: &Table,
    methods: &Table,
    process_methods: &Table,
    lutra: &Table,
    internal: &Table,
    host: bool,
) -> mlua::Result<()> {
    if !host {
        let debug: Table = lua.globals().get("debug")?;
        let stock: mlua::Value = debug.get("setuservalue")?;
        let mut upvalues = MultiValue::new();
        upvalues.push_back(stock);
        debug.set("setuservalue", closure(lua, guard_setuservalue, upvalues)?)?;
        // SAFETY: a protected call on the state's stack, left as it was.
        unsafe { lua.exec_raw::<()>((), |state| prepare_last_handle(state))? };
    }
    let named = lua.create_table()?;
    let weak_values = lua.create_table()?;
    weak_values.set("__mode", "v")?;
    named.set_metatable(Some(weak_values))?;
    let shared = lua.create_table()?;
    shared.set("cannot", internal.get::<mlua::Value>("cannot")?)?;
    shared.set("named", &named)?;
    shared.set(
        "take_pending",
        lua.create_function(|lua, ()| {
            let message = ProcessContext::of(lua)?.pending.borrow_mut().take();
            match message {
                Some(message) => crate::transfer::import(lua, &message),
                None => Ok(MultiValue::new()),
            }
        })?,
    )?;
    lua.set_named_registry_value(SHARED_KEY, &shared)?;
    let in_front = |table: &Table, name: &str, function: ffi::lua_CFunction| {
        table.set(
            name,
            native(lua, &shared, function, table.get(name)?, false, host)?,
        )
    };
    in_front(methods, "send", entry::<channel::Send>)?;
    in_front(methods, "receive", entry::<channel::Receive>)?;
    in_front(process_methods, "send", entry::<mailbox::Send>)?;
    in_front(lutra, "receive", entry::<mailbox::Receive>)?;
    raw.set("lp_named", named)?;
    raw.set(
        "lp_native",
        lua.create_function(move |lua, (kind, fallback): (String, Function)| {
            let function: ffi::lua_CFunction = match kind.as_str() {
                "send" => entry::<luaproc::Send>,
                "receive" => entry::<luaproc::Receive>,
                _ => return Err(mlua::Error::runtime("lp_native: send or receive expected")),
            };
            native(
                lua,
                &lua.named_registry_value(SHARED_KEY)?,
                function,
                fallback,
                true,
                host,
            )
        })?,
    )?;
    Ok(())
}
