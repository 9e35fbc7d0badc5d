//! Import: a [`Message`] → Lua values of the receiving process.
//!
//! Tables are created first, then filled, so that references between them (cycles,
//! shared sub-tables) resolve to the same new table. A function sent twice in one
//! message is loaded once.

use crate::channel::ChannelHandle;
use crate::process::ProcessHandle;
use crate::transfer::function::{IsolatedFunction, load_isolated};
use crate::transfer::{Message, Value};
use mlua::{Function, Lua, MultiValue, Table};
use std::collections::HashMap;

/// Functions loaded during one import, by their shared bytecode's address.
type Loaded = HashMap<*const IsolatedFunction, Function>;

/// Imports every value of `message` into `lua`.
pub(crate) fn import(lua: &Lua, message: &Message) -> mlua::Result<MultiValue> {
    let mut loaded = Loaded::new();
    let tables = message
        .tables
        .iter()
        .map(|entries| lua.create_table_with_capacity(0, entries.len()))
        .collect::<mlua::Result<Vec<Table>>>()?;
    for (table, entries) in tables.iter().zip(&message.tables) {
        for (key, value) in entries {
            let key = one(lua, key, &tables, &mut loaded)?;
            let value = one(lua, value, &tables, &mut loaded)?;
            table.raw_set(key, value)?;
        }
    }
    message
        .values
        .iter()
        .map(|value| one(lua, value, &tables, &mut loaded))
        .collect()
}

/// Imports one value that is not a message's table (a frozen table's entry).
pub(crate) fn import_value(lua: &Lua, value: &Value) -> mlua::Result<mlua::Value> {
    one(lua, value, &[], &mut Loaded::new())
}

fn one(
    lua: &Lua,
    value: &Value,
    tables: &[Table],
    loaded: &mut Loaded,
) -> mlua::Result<mlua::Value> {
    Ok(match value {
        Value::Nil => mlua::Value::Nil,
        Value::Boolean(b) => mlua::Value::Boolean(*b),
        Value::Integer(i) => mlua::Value::Integer(*i),
        Value::Number(n) => mlua::Value::Number(*n),
        Value::String(bytes) => mlua::Value::String(lua.create_string(bytes.as_bytes())?),
        Value::Table(index) => mlua::Value::Table(
            tables
                .get(*index)
                .ok_or_else(|| {
                    mlua::Error::runtime("a message refers to a table it does not hold")
                })?
                .clone(),
        ),
        Value::Channel(channel) => ChannelHandle(channel.clone()).push(lua)?,
        Value::Process(process) => ProcessHandle(process.clone()).push(lua)?,
        Value::Function(function) => {
            let address = std::sync::Arc::as_ptr(function);
            if let Some(f) = loaded.get(&address) {
                return Ok(mlua::Value::Function(f.clone()));
            }
            let f = load_isolated(lua, function)?;
            loaded.insert(address, f.clone());
            mlua::Value::Function(f)
        }
        Value::Frozen(frozen) => frozen.clone().push(lua)?,
        Value::Shared(table) => crate::shared::SharedHandle(table.clone()).push(lua)?,
    })
}
