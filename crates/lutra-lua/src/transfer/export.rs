//! Export: Lua values of the sending process → a [`Message`].
//!
//! # Rules
//! - nil, booleans, integers, floats and strings are copied.
//! - Plain tables are deep-copied (raw contents; metatables are not carried); a table
//!   reached twice becomes one table reached twice on the other side, so cycles and
//!   shared sub-tables are preserved.
//! - Lutra's objects (channels, processes…) cross by reference; see [`object_value`].
//! - A Lua function crosses only if it is *isolated*: its only upvalue, if any, is
//!   `_ENV` (it uses globals, which resolve in the receiving process).
//! - Anything else (coroutines, foreign userdata, C functions, functions capturing
//!   locals) is refused with a [`TransferError`] naming the value's path.

use crate::channel::ChannelHandle;
use crate::process::ProcessHandle;
use crate::transfer::{Message, TransferError, Value};
use mlua::{AnyUserData, Function, Lua, Table};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

/// A function that captures nothing but `_ENV`, as stripped-of-nothing bytecode.
#[derive(Debug)]
pub struct IsolatedFunction {
    /// `string.dump` of the function.
    pub bytecode: Vec<u8>,
    /// Where it was defined (`@file.lua:12`), for error messages.
    pub origin: String,
}

/// Exports `values` as one message; `describe(i)` names the i-th value (`argument #2`).
pub(crate) fn export(
    lua: &Lua,
    values: &[mlua::Value],
    describe: impl Fn(usize) -> String,
) -> Result<Message, TransferError> {
    let mut exporter = Exporter {
        lua,
        tables: Vec::new(),
        seen: HashMap::new(),
    };
    let mut out = Vec::with_capacity(values.len());
    for (index, value) in values.iter().enumerate() {
        let mut path = describe(index + 1);
        out.push(exporter.value(value, &mut path)?);
    }
    Ok(Message {
        values: out,
        tables: exporter.tables,
    })
}

struct Exporter<'l> {
    lua: &'l Lua,
    tables: Vec<Vec<(Value, Value)>>,
    seen: HashMap<*const c_void, usize>,
}

impl Exporter<'_> {
    fn value(&mut self, value: &mlua::Value, path: &mut String) -> Result<Value, TransferError> {
        Ok(match value {
            mlua::Value::Nil => Value::Nil,
            mlua::Value::Boolean(b) => Value::Boolean(*b),
            mlua::Value::Integer(i) => Value::Integer(*i),
            mlua::Value::Number(n) => Value::Number(*n),
            mlua::Value::String(s) => Value::String(Arc::from(&*s.as_bytes())),
            mlua::Value::Table(t) => self.table(t, path)?,
            mlua::Value::Function(f) => isolated_function(self.lua, f, path)?,
            mlua::Value::UserData(ud) => object_value(ud, path)?,
            mlua::Value::Thread(_) => {
                return Err(refused(path, "coroutine", "a coroutine's stack cannot leave its process"));
            }
            mlua::Value::LightUserData(_) => {
                return Err(refused(path, "light userdata", "a raw pointer means nothing in another process"));
            }
            mlua::Value::Error(e) => Value::String(Arc::from(e.to_string().as_bytes())),
            other => {
                return Err(refused(path, other.type_name(), "this kind of value cannot be shared"));
            }
        })
    }

    fn table(&mut self, table: &Table, path: &mut String) -> Result<Value, TransferError> {
        let address = table.to_pointer();
        if let Some(&index) = self.seen.get(&address) {
            return Ok(Value::Table(index));
        }
        let index = self.tables.len();
        self.tables.push(Vec::new());
        self.seen.insert(address, index);
        let mut entries = Vec::new();
        for pair in table.pairs::<mlua::Value, mlua::Value>() {
            let (key, value) = pair.map_err(|e| refused(path, "table", &e.to_string()))?;
            let mark = path.len();
            path.push_str(&key_path(&key));
            let key_value = self.value(&key, path)?;
            let value_value = self.value(&value, path)?;
            path.truncate(mark);
            entries.push((key_value, value_value));
        }
        self.tables[index] = entries;
        Ok(Value::Table(index))
    }
}

/// Lutra's objects that cross by reference.
fn object_value(ud: &AnyUserData, path: &str) -> Result<Value, TransferError> {
    if let Ok(channel) = ud.borrow::<ChannelHandle>() {
        return Ok(Value::Channel(channel.0.clone()));
    }
    if let Ok(process) = ud.borrow::<ProcessHandle>() {
        return Ok(Value::Process(process.0.clone()));
    }
    Err(refused(path, "userdata", "only Lutra's channels, processes, frozen values and shared tables can cross"))
}

fn isolated_function(lua: &Lua, f: &Function, path: &str) -> Result<Value, TransferError> {
    let info = f.info();
    if info.what == "C" {
        return Err(refused(path, "C function", "only Lua functions can be sent (as bytecode)"));
    }
    let get_upvalue: Function = lua
        .named_registry_value(crate::process::GETUPVALUE_KEY)
        .map_err(|e| refused(path, "function", &e.to_string()))?;
    for index in 1.. {
        let (name, _): (Option<String>, mlua::Value) = get_upvalue
            .call((f.clone(), index))
            .map_err(|e| refused(path, "function", &e.to_string()))?;
        match name {
            None => break,
            Some(name) if name == "_ENV" => {}
            Some(name) => {
                return Err(refused(
                    path,
                    "function",
                    &format!(
                        "it captures the local '{name}'; a function sent to another process may use only globals: pass '{name}' as an argument instead"
                    ),
                ));
            }
        }
    }
    let origin = format!(
        "{}:{}",
        info.short_src.as_deref().unwrap_or("?"),
        info.line_defined.unwrap_or(0)
    );
    Ok(Value::Function(Arc::new(IsolatedFunction {
        bytecode: f.dump(false),
        origin,
    })))
}

fn key_path(key: &mlua::Value) -> String {
    match key {
        mlua::Value::String(s) => {
            let text = s.to_string_lossy();
            let identifier = !text.is_empty()
                && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !text.starts_with(|c: char| c.is_ascii_digit());
            if identifier {
                format!(".{text}")
            } else {
                format!("[{text:?}]")
            }
        }
        mlua::Value::Integer(i) => format!("[{i}]"),
        mlua::Value::Number(n) => format!("[{n}]"),
        mlua::Value::Boolean(b) => format!("[{b}]"),
        other => format!("[{}]", other.type_name()),
    }
}

pub(crate) fn refused(path: &str, kind: &str, reason: &str) -> TransferError {
    TransferError {
        path: path.to_owned(),
        kind: kind.to_owned(),
        reason: reason.to_owned(),
    }
}
