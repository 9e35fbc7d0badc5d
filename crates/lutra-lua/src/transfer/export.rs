//! Export: Lua values of the sending process → a [`Message`].
//!
//! # Rules
//! - nil, booleans, integers, floats and strings are copied (integers and floats stay
//!   distinct; strings are bytes).
//! - Plain tables are deep-copied (raw contents, as `next` sees them; metatables are
//!   not carried); a table reached twice becomes one table reached twice on the other
//!   side, so cycles and shared sub-tables are preserved.
//! - `lutra.move(t)` markers export `t` and note it to be emptied once the send is
//!   committed (see `moved.rs`); a table already moved is refused.
//! - Frozen tables, channels and processes cross by reference; see [`object_value`].
//! - Lua functions cross if isolated (see `function.rs`); the same function reached
//!   twice is one function on the other side.
//! - Anything else (coroutines, foreign userdata, C functions, functions capturing
//!   locals, light userdata) is refused with a [`TransferError`] naming the value's
//!   key path (`argument #2.config[3].handler`) and the reason.
//!
//! # Protocol
//! Tables are walked iteratively (a work list, not recursion), so a long linked list
//! cannot overflow the stack. Each table remembers where it was first found; a path
//! is only spelled out when a value is refused.

use crate::channel::ChannelHandle;
use crate::process::ProcessHandle;
use crate::transfer::freeze::FrozenRef;
use crate::transfer::function::{IsolatedFunction, isolate};
use crate::transfer::moved::{MOVED_MESSAGE, MoveMarker, Moves, is_moved};
use crate::transfer::{Message, MessageString, TransferError, Value};
use mlua::{AnyUserData, Function, Lua, Table};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

/// Path segments shown in full; longer paths keep their first and last segments.
const PATH_SEGMENTS: usize = 16;

/// Exports `values` as one message, committing any `lutra.move` in it; `describe(i)`
/// names the i-th value (`argument #2`), counting from 1.
pub(crate) fn export(
    lua: &Lua,
    values: &[mlua::Value],
    describe: impl Fn(usize) -> String,
) -> Result<Message, TransferError> {
    let (message, moves) = export_pending(lua, values, describe)?;
    moves
        .commit(lua)
        .map_err(|e| refused("a moved table", "table", &e.to_string()))?;
    Ok(message)
}

/// Exports `values` as one message; the moves it contains happen only when the
/// caller commits them (after the message was queued).
pub(crate) fn export_pending(
    lua: &Lua,
    values: &[mlua::Value],
    describe: impl Fn(usize) -> String,
) -> Result<(Message, Moves), TransferError> {
    if let Some(values) = scalars(values) {
        return Ok((Message::of(values), Moves::default()));
    }
    let mut exporter = Exporter::new(lua, &describe, true);
    let values = exporter.run(values)?;
    let message = Message {
        values: values.into(),
        tables: exporter.tables.into(),
    };
    Ok((message, exporter.moves))
}

/// Exports `value` for `lutra.freeze`: as a message, but move markers are refused.
pub(crate) fn export_for_freeze(lua: &Lua, value: &mlua::Value) -> Result<Message, TransferError> {
    let describe = |_| "argument #1".to_owned();
    let mut exporter = Exporter::new(lua, &describe, false);
    let values = exporter.run(std::slice::from_ref(value))?;
    Ok(Message {
        values: values.into(),
        tables: exporter.tables.into(),
    })
}

/// `values` as they are sent when none of them is a table, a function or a userdata
/// (the common message: numbers, booleans, strings), without walking anything;
/// `None` otherwise.
fn scalars(values: &[mlua::Value]) -> Option<Vec<Value>> {
    values.iter().map(scalar).collect()
}

/// `value` as sent when it is a plain value (nil, boolean, number, string), copied
/// as it is; `None` for a value the exporter must walk or refuse.
fn scalar(value: &mlua::Value) -> Option<Value> {
    Some(match value {
        mlua::Value::Nil => Value::Nil,
        mlua::Value::Boolean(b) => Value::Boolean(*b),
        mlua::Value::Integer(i) => Value::Integer(*i),
        mlua::Value::Number(n) => Value::Number(*n),
        mlua::Value::String(s) => Value::String(MessageString::new(&s.as_bytes())),
        _ => return None,
    })
}

/// Where a value sits: a root value, a key of a table, or the value at a key.
#[derive(Clone, Copy)]
enum Place<'a> {
    Root(usize),
    Key(usize),
    Entry(usize, &'a mlua::Value),
}

/// Where a table was first found (an owned [`Place`]).
enum Origin {
    Root(usize),
    Key(usize),
    Entry(usize, mlua::Value),
}

struct Exporter<'l> {
    lua: &'l Lua,
    /// The name of root value `i` (1-based), asked only for an error message.
    describe: &'l dyn Fn(usize) -> String,
    allow_moves: bool,
    tables: Vec<Vec<(Value, Value)>>,
    origins: Vec<Origin>,
    seen: HashMap<*const c_void, usize>,
    functions: HashMap<*const c_void, Arc<IsolatedFunction>>,
    pending: Vec<(usize, Table)>,
    moves: Moves,
}

impl<'l> Exporter<'l> {
    fn new(lua: &'l Lua, describe: &'l dyn Fn(usize) -> String, allow_moves: bool) -> Self {
        Self {
            lua,
            describe,
            allow_moves,
            tables: Vec::new(),
            origins: Vec::new(),
            seen: HashMap::new(),
            functions: HashMap::new(),
            pending: Vec::new(),
            moves: Moves::default(),
        }
    }

    fn run(&mut self, values: &[mlua::Value]) -> Result<Vec<Value>, TransferError> {
        let out = values
            .iter()
            .enumerate()
            .map(|(index, value)| self.value(value, Place::Root(index)))
            .collect::<Result<Vec<_>, _>>()?;
        while let Some((index, table)) = self.pending.pop() {
            self.walk(index, &table)?;
        }
        Ok(out)
    }

    fn walk(&mut self, index: usize, table: &Table) -> Result<(), TransferError> {
        let mut entries = Vec::new();
        for pair in table.pairs::<mlua::Value, mlua::Value>() {
            let (key, value) =
                pair.map_err(|e| self.refuse(Place::Key(index), "table", &e.to_string()))?;
            let key_value = self.value(&key, Place::Key(index))?;
            let value_value = self.value(&value, Place::Entry(index, &key))?;
            entries.push((key_value, value_value));
        }
        self.tables[index] = entries;
        Ok(())
    }

    fn value(&mut self, value: &mlua::Value, place: Place<'_>) -> Result<Value, TransferError> {
        if let Some(plain) = scalar(value) {
            return Ok(plain);
        }
        Ok(match value {
            mlua::Value::Table(t) => self.table(t, place)?,
            mlua::Value::Function(f) => self.function(f, place)?,
            mlua::Value::UserData(ud) => self.userdata(ud, place)?,
            mlua::Value::Thread(_) => {
                return Err(self.refuse(
                    place,
                    "coroutine",
                    "a coroutine's stack cannot leave its process",
                ));
            }
            mlua::Value::LightUserData(_) => {
                return Err(self.refuse(
                    place,
                    "light userdata",
                    "a raw pointer means nothing in another process",
                ));
            }
            mlua::Value::Error(e) => Value::String(MessageString::new(e.to_string().as_bytes())),
            other => {
                return Err(self.refuse(
                    place,
                    other.type_name(),
                    "this kind of value cannot cross between processes",
                ));
            }
        })
    }

    fn table(&mut self, table: &Table, place: Place<'_>) -> Result<Value, TransferError> {
        let address = table.to_pointer();
        if let Some(&index) = self.seen.get(&address) {
            return Ok(Value::Table(index));
        }
        if is_moved(self.lua, table) {
            return Err(self.refuse(place, "table", MOVED_MESSAGE));
        }
        let index = self.tables.len();
        self.tables.push(Vec::new());
        self.origins.push(match place {
            Place::Root(i) => Origin::Root(i),
            Place::Key(t) => Origin::Key(t),
            Place::Entry(t, key) => Origin::Entry(t, key.clone()),
        });
        self.seen.insert(address, index);
        self.pending.push((index, table.clone()));
        Ok(Value::Table(index))
    }

    fn function(&mut self, f: &Function, place: Place<'_>) -> Result<Value, TransferError> {
        let address = f.to_pointer();
        if let Some(function) = self.functions.get(&address) {
            return Ok(Value::Function(function.clone()));
        }
        let function = Arc::new(
            isolate(self.lua, f).map_err(|(kind, reason)| self.refuse(place, kind, &reason))?,
        );
        self.functions.insert(address, function.clone());
        Ok(Value::Function(function))
    }

    fn userdata(&mut self, ud: &AnyUserData, place: Place<'_>) -> Result<Value, TransferError> {
        if ud.is::<MoveMarker>() {
            return self.moved(ud, place);
        }
        if let Ok(frozen) = ud.borrow::<FrozenRef>() {
            return Ok(Value::Frozen(frozen.clone()));
        }
        object_value(ud, &self.path(place))
    }

    fn moved(&mut self, marker: &AnyUserData, place: Place<'_>) -> Result<Value, TransferError> {
        if !self.allow_moves {
            return Err(self.refuse(
                place,
                "lutra.move marker",
                "a move marker only means something in a message (ch:send(lutra.move(t)))",
            ));
        }
        let table: Table = marker
            .user_value()
            .map_err(|e| self.refuse(place, "lutra.move marker", &e.to_string()))?;
        if is_moved(self.lua, &table) {
            return Err(self.refuse(place, "table", &format!("{MOVED_MESSAGE} already")));
        }
        let value = self.table(&table, place)?;
        self.moves.note(&table);
        Ok(value)
    }

    fn refuse(&self, place: Place<'_>, kind: &str, reason: &str) -> TransferError {
        refused(&self.path(place), kind, reason)
    }

    /// The key path of `place`: its root's name, then one segment per table.
    fn path(&self, place: Place<'_>) -> String {
        let (mut segments, mut table, key_of) = match place {
            Place::Root(i) => return (self.describe)(i + 1),
            Place::Key(t) => (Vec::new(), t, true),
            Place::Entry(t, key) => (vec![key_path(key)], t, false),
        };
        loop {
            match &self.origins[table] {
                Origin::Root(i) => {
                    segments.push((self.describe)(*i + 1));
                    break;
                }
                Origin::Key(t) => {
                    segments.push("[<a table used as a key>]".into());
                    table = *t;
                }
                Origin::Entry(t, key) => {
                    segments.push(key_path(key));
                    table = *t;
                }
            }
        }
        segments.reverse();
        if segments.len() > PATH_SEGMENTS {
            let tail = segments.split_off(segments.len() - (PATH_SEGMENTS - 4));
            segments.truncate(4);
            segments.push(".…".into());
            segments.extend(tail);
        }
        let path = segments.concat();
        if key_of {
            format!("a key of {path}")
        } else {
            path
        }
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
    if let Ok(shared) = ud.borrow::<crate::shared::SharedHandle>() {
        return Ok(Value::Shared(shared.0.clone()));
    }
    let kind = match userdata_name(ud) {
        Some(name) => format!("userdata ({name})"),
        None => "userdata".to_owned(),
    };
    Err(refused(
        path,
        &kind,
        "only Lutra's channels, processes, frozen values and shared tables can cross",
    ))
}

/// What a foreign userdata calls itself (`__name`, or its `tostring` without the
/// address: `file` for an io file).
fn userdata_name(ud: &AnyUserData) -> Option<String> {
    if let Ok(name) = ud.type_name()
        && &*name.as_bytes() != b"userdata"
    {
        return Some(name.to_string_lossy());
    }
    let text = mlua::Value::UserData(ud.clone()).to_string().ok()?;
    let name = text.split([' ', ':']).next()?;
    (!name.is_empty() && name != "userdata").then(|| name.to_owned())
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
        other => format!("[<{}>]", other.type_name()),
    }
}

pub(crate) fn refused(path: &str, kind: &str, reason: &str) -> TransferError {
    TransferError {
        path: path.to_owned(),
        kind: kind.to_owned(),
        reason: reason.to_owned(),
    }
}
