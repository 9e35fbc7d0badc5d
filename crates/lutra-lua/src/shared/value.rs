//! What a shared table holds: [`Stored`] values and [`Key`]s, and their conversion
//! from and to the Lua values of a process.
//!
//! # Rules (Guild's shareable values, seed 002)
//! - nil, booleans, integers, floats and strings are stored by value.
//! - Shared tables, channels, processes, isolated functions and the other values that
//!   cross between processes by reference (frozen values) are stored by reference.
//! - A plain table is copied into a new shared table, recursively (a table reached
//!   twice becomes one shared table reached twice, so cycles survive).
//! - `lutra.move(t)` stores what `t` would store, and notes `t` in
//!   [`Converter::moves`]: the caller moves it once the store is committed
//!   (`transfer/moved.rs`). A marker is never a key, and looking one up moves nothing.
//! - Anything else (coroutines, foreign userdata, functions with upvalues) is refused
//!   with a message that names the value, where it was going and why.
//! - Keys follow Lua: a float with an integer value is that integer; nil and NaN are
//!   not keys. Keys are values that keep their identity across processes: booleans,
//!   numbers, strings, shared tables, channels, processes, frozen values.

use crate::shared::SharedTable;
use crate::transfer::moved::{MOVED_MESSAGE, MoveMarker, Moves, is_moved};
use crate::transfer::{self, Message, Value};
use equivalent::Equivalent;
use mlua::{AnyUserData, Lua, Table};
use std::collections::HashMap;
use std::ffi::c_void;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// One value of a shared table's cell (`Nil` marks a removed key).
#[derive(Clone, Debug)]
pub enum Stored {
    /// No value: the key is absent.
    Nil,
    /// A boolean.
    Boolean(bool),
    /// An integer.
    Integer(i64),
    /// A float.
    Number(f64),
    /// A string.
    String(Arc<[u8]>),
    /// Another shared table.
    Table(Arc<SharedTable>),
    /// A value that crosses between processes by reference (channel, process,
    /// isolated function, frozen value).
    Object(Value),
}

lutra_stm::boxed_transactable!(Stored);

/// Strings up to this length are copied out of a cell by a read, not shared: a
/// private copy writes nothing shared, where sharing writes the string's reference
/// count (the same cache line for every reader of that value). Longer strings are
/// shared: copying them would cost more than the contended count.
const DETACHED_STRING_MAX: usize = 256;

impl Stored {
    /// Whether this is `Nil`.
    pub fn is_nil(&self) -> bool {
        matches!(self, Stored::Nil)
    }

    /// A copy of this value for a reader, taken without writing shared memory where
    /// that is cheap: scalars are copied, strings up to `DETACHED_STRING_MAX` bytes
    /// get a private copy; tables, objects and longer strings are shared (their
    /// reference count is written: a handle to them holds a reference).
    pub fn detached(&self) -> Stored {
        match self {
            Stored::String(s) if s.len() <= DETACHED_STRING_MAX => {
                Stored::String(Arc::from(&s[..]))
            }
            other => other.clone(),
        }
    }
}

/// A key of a shared table.
#[derive(Clone, Debug)]
pub enum Key {
    /// A boolean.
    Boolean(bool),
    /// An integer (also a float with an integer value).
    Integer(i64),
    /// A float that is not an integer, by its bits.
    Float(u64),
    /// A string.
    String(Arc<[u8]>),
    /// A shared table, channel, process or frozen value, by identity (its address),
    /// with the value.
    Object(usize, Stored),
}

/// A borrowed view of a key: what lookups build from a Lua value without allocating.
/// `Key` hashes and compares through it, so both hash alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyRef<'a> {
    /// A boolean.
    Boolean(bool),
    /// An integer.
    Integer(i64),
    /// A non-integer float's bits.
    Float(u64),
    /// A string's bytes.
    String(&'a [u8]),
    /// An object's address.
    Object(usize),
}

impl Key {
    /// The borrowed view of this key.
    pub fn view(&self) -> KeyRef<'_> {
        match self {
            Key::Boolean(b) => KeyRef::Boolean(*b),
            Key::Integer(i) => KeyRef::Integer(*i),
            Key::Float(bits) => KeyRef::Float(*bits),
            Key::String(s) => KeyRef::String(s),
            Key::Object(address, _) => KeyRef::Object(*address),
        }
    }

    /// The key as a stored value (what `pairs` hands back).
    pub fn to_stored(&self) -> Stored {
        match self {
            Key::Boolean(b) => Stored::Boolean(*b),
            Key::Integer(i) => Stored::Integer(*i),
            Key::Float(bits) => Stored::Number(f64::from_bits(*bits)),
            Key::String(s) => Stored::String(s.clone()),
            Key::Object(_, value) => value.clone(),
        }
    }

    /// The integer this key is, if it is one.
    pub fn as_integer(&self) -> Option<i64> {
        match self {
            Key::Integer(i) => Some(*i),
            _ => None,
        }
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.view() == other.view()
    }
}

impl Eq for Key {}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.view().hash(state);
    }
}

impl Equivalent<Key> for KeyRef<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        *self == key.view()
    }
}

/// A float key as Lua normalises it: an integer when it has an integer value.
fn float_key(n: f64) -> Result<KeyRef<'static>, String> {
    if n.is_nan() {
        return Err("a shared table's key cannot be NaN".into());
    }
    if n.fract() == 0.0 && n >= -(2f64.powi(63)) && n < 2f64.powi(63) {
        Ok(KeyRef::Integer(n as i64))
    } else {
        Ok(KeyRef::Float(n.to_bits()))
    }
}

/// Runs `found` with the key view of `value` for a lookup; `Ok(None)` when the value
/// cannot be a key (nil, NaN, a plain table...): nothing is stored under it.
pub(crate) fn with_key_ref<R>(
    lua: &Lua,
    value: &mlua::Value,
    found: impl FnOnce(KeyRef<'_>) -> R,
) -> Option<R> {
    match value {
        mlua::Value::Boolean(b) => Some(found(KeyRef::Boolean(*b))),
        mlua::Value::Integer(i) => Some(found(KeyRef::Integer(*i))),
        mlua::Value::Number(n) => float_key(*n).ok().map(found),
        mlua::Value::String(s) => Some(found(KeyRef::String(&s.as_bytes()))),
        mlua::Value::UserData(ud) => object_address(lua, ud).map(|a| found(KeyRef::Object(a))),
        _ => None,
    }
}

/// The address that identifies a Lutra object used as a key, if it can be one.
fn object_address(lua: &Lua, ud: &AnyUserData) -> Option<usize> {
    match object_of(lua, ud).ok()? {
        Stored::Table(table) => Some(Arc::as_ptr(&table) as usize),
        Stored::Object(Value::Channel(channel)) => Some(Arc::as_ptr(&channel) as usize),
        Stored::Object(Value::Process(process)) => Some(Arc::as_ptr(&process) as usize),
        Stored::Object(Value::Frozen(frozen)) => Some(frozen.address() as usize),
        _ => None,
    }
}

/// The key for storing under `value`, or why it cannot be one.
pub(crate) fn to_key(lua: &Lua, value: &mlua::Value) -> Result<Key, String> {
    Ok(match value {
        mlua::Value::Nil => return Err("a shared table's key cannot be nil".into()),
        mlua::Value::Boolean(b) => Key::Boolean(*b),
        mlua::Value::Integer(i) => Key::Integer(*i),
        mlua::Value::Number(n) => match float_key(*n)? {
            KeyRef::Integer(i) => Key::Integer(i),
            _ => Key::Float(n.to_bits()),
        },
        mlua::Value::String(s) => Key::String(Arc::from(&*s.as_bytes())),
        mlua::Value::UserData(ud) if ud.is::<MoveMarker>() => {
            return Err(
                "a moved table (lutra.move) cannot be a shared table's key: a shared \
                        table's keys are compared by identity, and a moved table's \
                        contents go to a new table"
                    .into(),
            );
        }
        mlua::Value::UserData(ud) => match object_address(lua, ud) {
            Some(address) => Key::Object(address, object_of(lua, ud).map_err(|e| e.to_string())?),
            None => return Err(not_a_key(value.type_name())),
        },
        other => return Err(not_a_key(other.type_name())),
    })
}

fn not_a_key(kind: &str) -> String {
    format!(
        "a {kind} cannot be a shared table's key (keys are booleans, numbers, strings, \
         shared tables, channels, processes and frozen values)"
    )
}

/// A plain table being copied into a new shared table, with its converted entries.
pub(crate) struct Copied {
    pub(crate) table: Arc<SharedTable>,
    pub(crate) entries: Vec<(Key, Stored)>,
}

/// Converts Lua values into stored ones. Plain tables become new shared tables whose
/// contents are listed in `copies`, to be written by the transaction that stores the
/// value ([`SharedTable::fill`]): conversion reads Lua, filling writes the engine.
///
/// Nested tables are converted from a worklist, not by recursion, so a table nested
/// however deep cannot overflow the worker's stack. Key paths for error messages are
/// kept as a tree of suffixes (`paths`), built into a string only for an error.
pub(crate) struct Converter<'l> {
    lua: &'l Lua,
    seen: HashMap<*const c_void, Arc<SharedTable>>,
    pub(crate) copies: Vec<Copied>,
    /// The tables given with `lutra.move`, to be moved once the store is committed.
    pub(crate) moves: Moves,
    /// Tables registered but not converted yet, with the index of their path.
    pending: Vec<(Table, Arc<SharedTable>, usize)>,
    /// Path nodes: the parent's index (none for the root) and this node's text.
    paths: Vec<(Option<usize>, String)>,
}

impl<'l> Converter<'l> {
    pub(crate) fn new(lua: &'l Lua) -> Self {
        Self {
            lua,
            seen: HashMap::new(),
            copies: Vec::new(),
            moves: Moves::default(),
            pending: Vec::new(),
            paths: Vec::new(),
        }
    }

    /// `value` as a stored value; `path` names where it goes (`key 'x'`), for errors.
    pub(crate) fn value(&mut self, value: &mlua::Value, path: &str) -> Result<Stored, String> {
        self.paths.push((None, path.to_owned()));
        let root = self.paths.len() - 1;
        let stored = self.shallow(value, root, None)?;
        while let Some((table, shared, path)) = self.pending.pop() {
            let mut entries = Vec::new();
            for pair in table.pairs::<mlua::Value, mlua::Value>() {
                let (key, value) = pair.map_err(|e| e.to_string())?;
                let converted = match to_key(self.lua, &key) {
                    Ok(converted) => converted,
                    Err(reason) => {
                        let at = self.path(path, Some(&key));
                        return Err(format!("cannot store {at}: {reason}"));
                    }
                };
                let value = self.shallow(&value, path, Some(&key))?;
                entries.push((converted, value));
            }
            self.copies.push(Copied {
                table: shared,
                entries,
            });
        }
        Ok(stored)
    }

    /// The path of node `at`, followed by `key` if given.
    fn path(&self, at: usize, key: Option<&mlua::Value>) -> String {
        let mut parts = Vec::new();
        let mut node = Some(at);
        while let Some(index) = node {
            let (parent, text) = &self.paths[index];
            parts.push(text.as_str());
            node = *parent;
        }
        let mut path: String = parts.into_iter().rev().collect();
        if let Some(key) = key {
            path.push_str(&key_suffix(key));
        }
        path
    }

    /// `value`, stored under `key` of the table at path node `at` (or at `at` itself),
    /// converting a plain table's shell only: its entries wait in `pending`.
    fn shallow(
        &mut self,
        value: &mlua::Value,
        at: usize,
        key: Option<&mlua::Value>,
    ) -> Result<Stored, String> {
        if let Some(stored) = plain(value) {
            return Ok(stored);
        }
        Ok(match value {
            mlua::Value::Table(t) => Stored::Table(self.table(t, at, key)?),
            mlua::Value::UserData(ud) if ud.is::<MoveMarker>() => {
                Stored::Table(self.moved(ud, at, key)?)
            }
            mlua::Value::UserData(ud) => match object_of(self.lua, ud) {
                Ok(stored) => stored,
                Err(error) => {
                    return Err(refused(&self.path(at, key), &error.kind, &error.reason));
                }
            },
            other => {
                let exported =
                    transfer::export(self.lua, std::slice::from_ref(other), |_| String::new());
                match exported {
                    Ok(message) => match message.values.into_iter().next() {
                        Some(value) => Stored::Object(value),
                        None => Stored::Nil,
                    },
                    Err(error) => {
                        return Err(refused(&self.path(at, key), &error.kind, &error.reason));
                    }
                }
            }
        })
    }

    /// The table a `lutra.move` marker gives, copied as a plain table and noted to
    /// be moved.
    #[cold]
    fn moved(
        &mut self,
        marker: &AnyUserData,
        at: usize,
        key: Option<&mlua::Value>,
    ) -> Result<Arc<SharedTable>, String> {
        let table: Table = marker.user_value().map_err(|e| e.to_string())?;
        if is_moved(self.lua, &table) {
            return Err(refused(
                &self.path(at, key),
                "moved table",
                &format!("{MOVED_MESSAGE} already"),
            ));
        }
        let shared = self.table(&table, at, key)?;
        self.moves.note(&table);
        Ok(shared)
    }

    fn table(
        &mut self,
        table: &Table,
        at: usize,
        key: Option<&mlua::Value>,
    ) -> Result<Arc<SharedTable>, String> {
        if is_moved(self.lua, table) {
            return Err(refused(&self.path(at, key), "moved table", MOVED_MESSAGE));
        }
        if table.metatable().is_some() {
            return Err(refused(
                &self.path(at, key),
                "table with a metatable",
                "a shared table has no metatable: store a plain table (its contents are copied)",
            ));
        }
        let address = table.to_pointer();
        if let Some(shared) = self.seen.get(&address) {
            return Ok(shared.clone());
        }
        let shared = Arc::new(SharedTable::new());
        self.seen.insert(address, shared.clone());
        let node = match key {
            Some(key) => {
                self.paths.push((Some(at), key_suffix(key)));
                self.paths.len() - 1
            }
            None => at,
        };
        self.pending.push((table.clone(), shared.clone(), node));
        Ok(shared)
    }
}

/// A shared table, or what `transfer` makes of another Lutra object.
/// A move marker is refused (it is no object: [`Converter`] stores its table's
/// contents), so that a key or a lookup never moves a table.
fn object_of(lua: &Lua, ud: &AnyUserData) -> Result<Stored, transfer::TransferError> {
    if let Ok(handle) = ud.borrow::<crate::shared::SharedHandle>() {
        return Ok(Stored::Table(handle.0.clone()));
    }
    if ud.is::<MoveMarker>() {
        return Err(transfer::TransferError {
            path: String::new(),
            kind: "lutra.move marker".into(),
            reason: "a moved table is stored by its contents, as a value, never as a key".into(),
        });
    }
    let value = mlua::Value::UserData(ud.clone());
    let message = transfer::export(lua, std::slice::from_ref(&value), |_| String::new())?;
    Ok(message
        .values
        .into_iter()
        .next()
        .map_or(Stored::Nil, Stored::Object))
}

/// `value` as it is stored, if it is stored as it is: nil, a boolean, a number or a
/// string (no table to copy, nothing that can be refused). `None` for the rest, which
/// a [`Converter`] converts.
pub(crate) fn plain(value: &mlua::Value) -> Option<Stored> {
    Some(match value {
        mlua::Value::Nil => Stored::Nil,
        mlua::Value::Boolean(b) => Stored::Boolean(*b),
        mlua::Value::Integer(i) => Stored::Integer(*i),
        mlua::Value::Number(n) => Stored::Number(*n),
        mlua::Value::String(s) => Stored::String(Arc::from(&*s.as_bytes())),
        _ => return None,
    })
}

fn refused(path: &str, kind: &str, reason: &str) -> String {
    format!("cannot store a {kind} in a shared table ({path}): {reason}")
}

/// `.name` or `[key]` appended to a path.
fn key_suffix(key: &mlua::Value) -> String {
    match key {
        mlua::Value::String(s) => format!("[{:?}]", s.to_string_lossy()),
        mlua::Value::Integer(i) => format!("[{i}]"),
        mlua::Value::Number(n) => format!("[{n}]"),
        mlua::Value::Boolean(b) => format!("[{b}]"),
        other => format!("[{}]", other.type_name()),
    }
}

/// A stored value as a Lua value of `lua`.
pub(crate) fn to_lua(lua: &Lua, stored: &Stored) -> mlua::Result<mlua::Value> {
    Ok(match stored {
        Stored::Nil => mlua::Value::Nil,
        Stored::Boolean(b) => mlua::Value::Boolean(*b),
        Stored::Integer(i) => mlua::Value::Integer(*i),
        Stored::Number(n) => mlua::Value::Number(*n),
        Stored::String(s) => mlua::Value::String(lua.create_string(&**s)?),
        Stored::Table(table) => crate::shared::SharedHandle(table.clone()).push(lua)?,
        Stored::Object(value) => transfer::import(lua, &Message::of(vec![value.clone()]))?
            .pop_front()
            .unwrap_or(mlua::Value::Nil),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    fn hash_of(value: &impl Hash) -> u64 {
        let mut hasher = DefaultHasher::new();
        value.hash(&mut hasher);
        hasher.finish()
    }

    #[test]
    fn keys_hash_and_compare_as_their_views() {
        let key = Key::String(Arc::from(&b"name"[..]));
        let view = KeyRef::String(b"name");
        assert_eq!(hash_of(&key), hash_of(&view));
        assert!(view.equivalent(&key));
        assert!(!KeyRef::String(b"other").equivalent(&key));
        assert_ne!(Key::Integer(1), Key::Float(1.5f64.to_bits()));
    }

    #[test]
    fn float_keys_with_integer_values_are_integers() {
        assert_eq!(float_key(3.0), Ok(KeyRef::Integer(3)));
        assert_eq!(float_key(-0.0), Ok(KeyRef::Integer(0)));
        assert_eq!(float_key(2.5), Ok(KeyRef::Float(2.5f64.to_bits())));
        assert!(float_key(f64::NAN).is_err());
        assert_eq!(float_key(1e300), Ok(KeyRef::Float(1e300f64.to_bits())));
    }
}
