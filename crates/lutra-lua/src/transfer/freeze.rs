//! `lutra.freeze(t)`: deeply immutable tables shared by reference (seed 002's
//! "immutable objects are shareable").
//!
//! A frozen value is a node of a [`FrozenGraph`]: an immutable Rust copy of the table
//! and of every table reachable from it (cycles and shared sub-tables kept), built
//! once by the exporter and then never changed. Lua sees a node as a userdata
//! ([`FrozenRef`]) whose `__index`, `__len` and `__pairs` read the graph; `ipairs`
//! works through `__index`; `__newindex` raises. Crossing a channel copies the `Arc`,
//! never the graph, so every process sees the same object (same `tostring`).
//!
//! # Invariants
//! - A graph never changes after it is built; `Value::Table(i)` inside it names node
//!   `i` of the same graph, and `Value::Frozen` a node of an older graph.
//! - A node's entries hold its integer keys `1..=length` first, in order, then the
//!   rest in the order the exporter met them; `pairs` follows this order.
//! - Each process has one userdata per node (interned by the node's address, which
//!   stays valid while the userdata holds the graph), so `==` works within a process.
//! - Keys are strings, numbers, booleans, tables (frozen with it), frozen values,
//!   channels, processes and shared tables (by identity); a function key is refused.

use crate::channel::ChannelHandle;
use crate::intern::push_interned;
use crate::process::ProcessHandle;
use crate::transfer::export::{export_for_freeze, refused};
use crate::transfer::function::load_isolated;
use crate::transfer::import::import_value;
use crate::transfer::{MessageString, TransferError, Value};
use mlua::{
    AnyUserData, LightUserData, Lua, MetaMethod, MultiValue, Table, UserData, UserDataFields,
    UserDataMethods,
};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

/// Registry key of the Lua function raising on assignment (from `transfer.lua`).
pub(crate) const FROZEN_NEWINDEX_KEY: &str = "lutra.frozen_newindex";
/// Registry key of the `next`-like function `pairs` returns for frozen tables.
pub(crate) const FROZEN_NEXT_KEY: &str = "lutra.frozen_next";

/// An immutable table graph (the result of one `lutra.freeze`).
#[derive(Debug)]
pub struct FrozenGraph {
    nodes: Vec<FrozenNode>,
}

#[derive(Debug)]
struct FrozenNode {
    entries: Vec<(Value, Value)>,
    by_string: HashMap<MessageString, usize>,
    by_other: HashMap<Key, usize>,
    length: usize,
}

/// A non-string key, by value or by identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Boolean(bool),
    Integer(i64),
    Float(u64),
    /// A node of the same graph.
    Node(usize),
    /// A runtime object (a node of another graph, a channel, a process), by address.
    Object(usize),
}

/// A frozen table: one node of a shared graph.
#[derive(Debug, Clone)]
pub struct FrozenRef {
    graph: Arc<FrozenGraph>,
    node: usize,
}

impl FrozenRef {
    /// The node's address: its identity in every process.
    pub fn address(&self) -> *const c_void {
        std::ptr::from_ref(&self.graph.nodes[self.node]).cast()
    }

    fn entries(&self) -> &FrozenNode {
        &self.graph.nodes[self.node]
    }

    /// The (interned) userdata for this node in `lua`.
    pub(crate) fn push(self, lua: &Lua) -> mlua::Result<mlua::Value> {
        let address = self.address();
        push_interned(lua, address, || self)
    }

    /// The position of `key` among the node's entries.
    fn position(&self, key: &mlua::Value) -> Option<usize> {
        let node = self.entries();
        let key = match key {
            mlua::Value::String(s) => return node.by_string.get(&*s.as_bytes()).copied(),
            mlua::Value::Boolean(b) => Key::Boolean(*b),
            mlua::Value::Integer(i) => Key::Integer(*i),
            mlua::Value::Number(n) => number_key(*n)?,
            mlua::Value::UserData(ud) => self.object_key(ud)?,
            _ => return None,
        };
        node.by_other.get(&key).copied()
    }

    fn object_key(&self, ud: &AnyUserData) -> Option<Key> {
        if let Ok(frozen) = ud.borrow::<FrozenRef>() {
            if Arc::ptr_eq(&frozen.graph, &self.graph) {
                return Some(Key::Node(frozen.node));
            }
            return Some(Key::Object(frozen.address() as usize));
        }
        if let Ok(channel) = ud.borrow::<ChannelHandle>() {
            return Some(Key::Object(Arc::as_ptr(&channel.0) as usize));
        }
        if let Ok(process) = ud.borrow::<ProcessHandle>() {
            return Some(Key::Object(Arc::as_ptr(&process.0) as usize));
        }
        if let Ok(shared) = ud.borrow::<crate::shared::SharedHandle>() {
            return Some(Key::Object(Arc::as_ptr(&shared.0) as usize));
        }
        None
    }

    /// A value of this node's graph as a Lua value; `holder` is this node's userdata
    /// (it caches loaded functions, so that `t.f == t.f`).
    fn to_lua(&self, lua: &Lua, holder: &AnyUserData, value: &Value) -> mlua::Result<mlua::Value> {
        match value {
            Value::Table(node) => FrozenRef {
                graph: self.graph.clone(),
                node: *node,
            }
            .push(lua),
            Value::Function(function) => {
                let cache = match holder.user_value::<Option<Table>>()? {
                    Some(cache) => cache,
                    None => {
                        let cache = lua.create_table()?;
                        holder.set_user_value(&cache)?;
                        cache
                    }
                };
                // The graph (held by `holder`) keeps the function alive: the address
                // cannot be reused while the cache exists.
                let key = LightUserData(Arc::as_ptr(function).cast_mut().cast());
                if let Some(f) = cache.raw_get::<Option<mlua::Function>>(key)? {
                    return Ok(mlua::Value::Function(f));
                }
                let f = load_isolated(lua, function)?;
                cache.raw_set(key, &f)?;
                Ok(mlua::Value::Function(f))
            }
            other => import_value(lua, other),
        }
    }
}

/// A float key as Lua normalises it: integral floats are integers; NaN is no key.
fn number_key(n: f64) -> Option<Key> {
    if n.is_nan() {
        return None;
    }
    // The bounds are i64's range, both exactly representable as f64.
    if n.fract() == 0.0 && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&n)
    {
        return Some(Key::Integer(n as i64));
    }
    Some(Key::Float(n.to_bits()))
}

/// The key of an entry's key at freeze time; `None` for a key that cannot be looked
/// up from Lua (a function).
fn entry_key(key: &Value) -> Option<Key> {
    match key {
        Value::Boolean(b) => Some(Key::Boolean(*b)),
        Value::Integer(i) => Some(Key::Integer(*i)),
        Value::Number(n) => number_key(*n),
        Value::Table(node) => Some(Key::Node(*node)),
        Value::Frozen(frozen) => Some(Key::Object(frozen.address() as usize)),
        Value::Channel(channel) => Some(Key::Object(Arc::as_ptr(channel) as usize)),
        Value::Process(process) => Some(Key::Object(Arc::as_ptr(process) as usize)),
        Value::Shared(table) => Some(Key::Object(Arc::as_ptr(table) as usize)),
        _ => None,
    }
}

fn build_node(mut entries: Vec<(Value, Value)>) -> Result<FrozenNode, TransferError> {
    let integers: std::collections::HashSet<i64> = entries
        .iter()
        .filter_map(|(k, _)| match k {
            Value::Integer(i) => Some(*i),
            _ => None,
        })
        .collect();
    let length = (1..).take_while(|i| integers.contains(i)).count();
    let sequence_rank = |key: &Value| match key {
        Value::Integer(i) if *i >= 1 && (*i as usize) <= length => *i as usize,
        _ => usize::MAX,
    };
    entries.sort_by_key(|(k, _)| sequence_rank(k));
    let mut node = FrozenNode {
        by_string: HashMap::new(),
        by_other: HashMap::new(),
        length,
        entries: Vec::new(),
    };
    for (position, (key, _)) in entries.iter().enumerate() {
        if let Value::String(s) = key {
            node.by_string.insert(s.clone(), position);
        } else if let Some(key) = entry_key(key) {
            node.by_other.insert(key, position);
        } else {
            return Err(refused(
                "a key of argument #1",
                "function",
                "a function cannot be a key of a frozen table (it could not be looked up)",
            ));
        }
    }
    node.entries = entries;
    Ok(node)
}

/// `lutra.freeze(value)`: the frozen form of `value`, or why it cannot be frozen.
pub(crate) fn freeze(lua: &Lua, value: &mlua::Value) -> mlua::Result<Result<mlua::Value, String>> {
    match value {
        mlua::Value::Nil
        | mlua::Value::Boolean(_)
        | mlua::Value::Integer(_)
        | mlua::Value::Number(_)
        | mlua::Value::String(_) => return Ok(Ok(value.clone())),
        mlua::Value::UserData(ud) if ud.is::<FrozenRef>() => return Ok(Ok(value.clone())),
        mlua::Value::Table(_) => {}
        other => {
            return Ok(Err(format!(
                "bad argument #1 to 'freeze' (table expected, got {})",
                other.type_name()
            )));
        }
    }
    let graph = match export_for_freeze(lua, value).and_then(|message| {
        let nodes = message
            .tables
            .into_iter()
            .map(build_node)
            .collect::<Result<_, _>>()?;
        Ok(FrozenGraph { nodes })
    }) {
        Ok(graph) => graph,
        Err(error) => return Ok(Err(format!("lutra.freeze: {error}"))),
    };
    let frozen = FrozenRef {
        graph: Arc::new(graph),
        node: 0,
    };
    Ok(Ok(frozen.push(lua)?))
}

/// `next` over a frozen table (what `pairs` returns).
pub(crate) fn frozen_next(
    lua: &Lua,
    (holder, key): (AnyUserData, mlua::Value),
) -> mlua::Result<MultiValue> {
    let frozen = holder.borrow::<FrozenRef>()?.clone();
    let position = if key.is_nil() {
        0
    } else {
        frozen
            .position(&key)
            .ok_or_else(|| mlua::Error::runtime("invalid key to 'next' over a frozen table"))?
            + 1
    };
    let mut out = MultiValue::new();
    if let Some((key, value)) = frozen.entries().entries.get(position) {
        out.push_back(frozen.to_lua(lua, &holder, key)?);
        out.push_back(frozen.to_lua(lua, &holder, value)?);
    } else {
        out.push_back(mlua::Value::Nil);
    }
    Ok(out)
}

impl UserData for FrozenRef {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_meta_field("__name", "lutra.frozen");
        fields.add_meta_field_with(MetaMethod::NewIndex, |lua| {
            lua.named_registry_value::<mlua::Function>(FROZEN_NEWINDEX_KEY)
        });
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_function(
            MetaMethod::Index,
            |lua, (holder, key): (AnyUserData, mlua::Value)| {
                let frozen = holder.borrow::<FrozenRef>()?.clone();
                match frozen.position(&key) {
                    Some(position) => {
                        frozen.to_lua(lua, &holder, &frozen.entries().entries[position].1)
                    }
                    None => Ok(mlua::Value::Nil),
                }
            },
        );
        methods.add_meta_method(MetaMethod::Len, |_, this, ()| Ok(this.entries().length));
        methods.add_meta_function(MetaMethod::Pairs, |lua, holder: AnyUserData| {
            let next: mlua::Function = lua.named_registry_value(FROZEN_NEXT_KEY)?;
            Ok((next, holder, mlua::Value::Nil))
        });
        methods.add_meta_method(MetaMethod::ToString, |_, this, ()| {
            Ok(format!("frozen table: {:p}", this.address()))
        });
    }
}
