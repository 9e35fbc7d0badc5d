//! Raw functions about transfer: freeze, move, and what they made.

use crate::api::{RawEntry, failure, function, success};
use crate::transfer::freeze::{
    FROZEN_NEWINDEX_KEY, FROZEN_NEXT_KEY, FrozenRef, freeze, frozen_next,
};
use crate::transfer::function::SETUPVALUE_KEY;
use crate::transfer::moved::{MOVED_METATABLE_KEY, is_moved, marker};
use mlua::{Function, Lua, MultiValue, Table};
use std::sync::OnceLock;

/// The raw functions of this module (made on first use, see [`super::RawEntry`]).
pub(super) const RAW: &[RawEntry] = &[
    ("freeze", |lua| {
        function(lua, |lua, value: mlua::Value| match freeze(lua, &value)? {
            Ok(frozen) => success(lua, frozen),
            Err(problem) => failure(lua, problem),
        })
    }),
    ("is_frozen", |lua| {
        function(lua, |_, value: mlua::Value| {
            Ok(matches!(&value, mlua::Value::UserData(ud) if ud.is::<FrozenRef>()))
        })
    }),
    ("move", |lua| {
        function(lua, |lua, table: Table| -> mlua::Result<MultiValue> {
            match marker(lua, &table)? {
                Ok(marker) => success(lua, marker),
                Err(problem) => failure(lua, problem),
            }
        })
    }),
    ("is_moved", |lua| {
        function(lua, |lua, value: mlua::Value| {
            Ok(matches!(&value, mlua::Value::Table(t) if is_moved(lua, t)))
        })
    }),
];

/// Runs `transfer.lua` with `raw` (whose `freeze`, `is_frozen`, `move` and
/// `is_moved` are the functions above) and the prelude's `internal` helpers, which
/// adds `lutra.freeze`, `lutra.is_frozen`, `lutra.move` and `lutra.is_moved` to
/// `lutra`.
pub(super) fn install(lua: &Lua, raw: &Table, lutra: &Table, internal: &Table) -> mlua::Result<()> {
    let debug: Table = lua.globals().get("debug")?;
    lua.set_named_registry_value(SETUPVALUE_KEY, debug.get::<Function>("setupvalue")?)?;
    lua.set_named_registry_value(FROZEN_NEXT_KEY, lua.create_function(frozen_next)?)?;
    static TRANSFER: OnceLock<Vec<u8>> = OnceLock::new();
    let source = include_str!("../transfer/transfer.lua");
    let chunk = crate::api::precompiled(lua, &TRANSFER, source, "=lutra.transfer")?;
    let exports: Table = chunk.call((raw, lutra, internal))?;
    lua.set_named_registry_value(
        MOVED_METATABLE_KEY,
        exports.get::<Table>("moved_metatable")?,
    )?;
    lua.set_named_registry_value(
        FROZEN_NEWINDEX_KEY,
        exports.get::<Function>("frozen_newindex")?,
    )?;
    Ok(())
}
