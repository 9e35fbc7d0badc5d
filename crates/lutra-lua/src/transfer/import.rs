//! Import: a [`Message`] → Lua values of the receiving process.
//!
//! Tables are created first, then filled, so that references between them (cycles,
//! shared sub-tables) resolve to the same new table.

use crate::channel::ChannelHandle;
use crate::process::ProcessHandle;
use crate::transfer::{Message, Value};
use mlua::chunk::ChunkMode;
use mlua::{Lua, MultiValue, Table};

/// Imports every value of `message` into `lua`.
pub(crate) fn import(lua: &Lua, message: &Message) -> mlua::Result<MultiValue> {
    let tables = message
        .tables
        .iter()
        .map(|entries| lua.create_table_with_capacity(0, entries.len()))
        .collect::<mlua::Result<Vec<Table>>>()?;
    for (table, entries) in tables.iter().zip(&message.tables) {
        for (key, value) in entries {
            table.raw_set(one(lua, key, &tables)?, one(lua, value, &tables)?)?;
        }
    }
    message
        .values
        .iter()
        .map(|value| one(lua, value, &tables))
        .collect()
}

fn one(lua: &Lua, value: &Value, tables: &[Table]) -> mlua::Result<mlua::Value> {
    Ok(match value {
        Value::Nil => mlua::Value::Nil,
        Value::Boolean(b) => mlua::Value::Boolean(*b),
        Value::Integer(i) => mlua::Value::Integer(*i),
        Value::Number(n) => mlua::Value::Number(*n),
        Value::String(bytes) => mlua::Value::String(lua.create_string(&**bytes)?),
        Value::Table(index) => mlua::Value::Table(tables[*index].clone()),
        Value::Channel(channel) => ChannelHandle(channel.clone()).push(lua)?,
        Value::Process(process) => ProcessHandle(process.clone()).push(lua)?,
        Value::Function(function) => mlua::Value::Function(
            lua.load(&function.bytecode[..])
                .set_name(format!("={}", function.origin))
                .set_mode(ChunkMode::Binary)
                .into_function()?,
        ),
    })
}
