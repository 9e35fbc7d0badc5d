//! The Lua face of a shared table: one userdata per table per process (interned, so
//! handles compare equal with `==` in every process), whose metamethods run each
//! access in the process's `lutra.atomic` attempt or, outside one, as a transaction
//! of its own.
//!
//! `__index`, `__len`, `__pairs` and `__tostring` are Rust; `__newindex` is the Lua
//! function of `shared.lua` (it raises refusals as plain string errors at the
//! caller's line) over [`set`].

use crate::atomic::{TxContext, with_tx};
use crate::intern::push_interned;
use crate::shared::SharedTable;
use crate::shared::value::{self, Converter, Key, Stored, to_lua, with_key_ref};
use crate::transfer::moved::{self, Moves};
use mlua::{Lua, MultiValue, UserData, UserDataFields, UserDataMethods};
use std::sync::{Arc, Mutex};

/// Registry key of the `__newindex` function that `shared.lua` returns.
pub(crate) const SHARED_NEWINDEX_KEY: &str = "lutra.shared.newindex";

/// A process's reference to a shared table.
pub(crate) struct SharedHandle(pub(crate) Arc<SharedTable>);

impl SharedHandle {
    /// The (interned) userdata for this table in `lua`.
    pub(crate) fn push(self, lua: &Lua) -> mlua::Result<mlua::Value> {
        let address = Arc::as_ptr(&self.0).cast();
        push_interned(lua, address, || self)
    }
}

impl UserData for SharedHandle {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_meta_field_with("__newindex", |lua| {
            lua.named_registry_value::<mlua::Function>(SHARED_NEWINDEX_KEY)
        });
        fields.add_meta_field("__name", "lutra.shared");
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method("__index", |lua, this, key: mlua::Value| {
            get(lua, &this.0, &key)
        });
        methods.add_meta_method("__len", |lua, this, ()| {
            with_tx(lua, |tx| this.0.border(tx))
        });
        methods.add_meta_method("__pairs", |lua, this, ()| pairs(lua, &this.0));
        methods.add_meta_method("__tostring", |_, this, ()| {
            Ok(format!("shared#{}", this.0.id()))
        });
    }
}

/// `t[key]`.
fn get(lua: &Lua, table: &SharedTable, key: &mlua::Value) -> mlua::Result<mlua::Value> {
    let stored = with_key_ref(lua, key, |key| with_tx(lua, |tx| table.get(tx, key)));
    match stored {
        Some(stored) => to_lua(lua, &stored?),
        None => Ok(mlua::Value::Nil),
    }
}

/// `t[key] = value`: `Err(message)` when the key or value cannot be stored (the
/// table is unchanged).
///
/// # Errors
/// The outer error: a doomed attempt (see [`with_tx`]).
pub(crate) fn set(
    lua: &Lua,
    table: &SharedTable,
    key: &mlua::Value,
    value: &mlua::Value,
) -> mlua::Result<Result<(), String>> {
    let key = match value::to_key(lua, key) {
        Ok(key) => key,
        Err(problem) => return Ok(Err(problem)),
    };
    if let Some(stored) = value::plain(value) {
        with_tx(lua, |tx| table.set(tx, key.clone(), stored.clone()))?;
        return Ok(Ok(()));
    }
    let mut converter = Converter::new(lua);
    let stored = match converter.value(value, &describe_key(&key)) {
        Ok(stored) => stored,
        Err(problem) => return Ok(Err(problem)),
    };
    let copies = converter.copies;
    with_tx(lua, |tx| {
        for copy in &copies {
            copy.table.fill(tx, &copy.entries)?;
        }
        table.set(tx, key.clone(), stored.clone())
    })?;
    stored_moves(lua, converter.moves)?;
    Ok(Ok(()))
}

/// The tables a committed store was given with `lutra.move` are moved: now, or with
/// the running `atomic` attempt (`transfer/moved.rs`, step 5).
fn stored_moves(lua: &Lua, moves: Moves) -> mlua::Result<()> {
    if moves.is_empty() {
        return Ok(());
    }
    let context = TxContext::of(lua)?;
    if context.running.get() {
        let depth = context.checkpoints.borrow().len();
        drop(context);
        moved::note_in_attempt(lua, moves, depth);
        return Ok(());
    }
    drop(context);
    moves.commit(lua)
}

/// `lutra.shared(t)`: a new shared table holding a copy of the plain table `t`.
pub(crate) fn new_from(
    lua: &Lua,
    source: Option<&mlua::Table>,
) -> mlua::Result<Result<mlua::Value, String>> {
    let table = match source {
        None => Arc::new(SharedTable::new()),
        Some(source) => {
            let mut converter = Converter::new(lua);
            let stored = converter.value(&mlua::Value::Table(source.clone()), "argument #1");
            let table = match stored {
                Ok(Stored::Table(table)) => table,
                Ok(_) => return Ok(Err("bad argument #1 to 'shared' (table expected)".into())),
                Err(problem) => return Ok(Err(problem)),
            };
            let copies = converter.copies;
            with_tx(lua, |tx| {
                copies
                    .iter()
                    .try_for_each(|copy| copy.table.fill(tx, &copy.entries))
            })?;
            stored_moves(lua, converter.moves)?;
            table
        }
    };
    Ok(Ok(SharedHandle(table).push(lua)?))
}

fn describe_key(key: &Key) -> String {
    match key {
        Key::String(s) => format!("key {:?}", String::from_utf8_lossy(s)),
        Key::Integer(i) => format!("key {i}"),
        Key::Float(bits) => format!("key {}", f64::from_bits(*bits)),
        Key::Boolean(b) => format!("key {b}"),
        Key::Object(..) => "an object key".into(),
    }
}

/// `pairs(t)`: the keys present when it starts, each value read when reached (skipping
/// keys removed since). Inside `lutra.atomic` the whole walk is one snapshot.
fn pairs(
    lua: &Lua,
    table: &Arc<SharedTable>,
) -> mlua::Result<(mlua::Function, mlua::Value, mlua::Value)> {
    let keys = with_tx(lua, |tx| table.keys(tx))?;
    let cursor = Mutex::new(keys.into_iter());
    let next = lua.create_function(move |lua, _: MultiValue| {
        loop {
            let entry = cursor.lock().unwrap_or_else(|p| p.into_inner()).next();
            let Some((key, cell)) = entry else {
                return Ok((mlua::Value::Nil, mlua::Value::Nil));
            };
            let value = with_tx(lua, |tx| cell.read(tx))?;
            if !value.is_nil() {
                return Ok((to_lua(lua, &key.to_stored())?, to_lua(lua, &value)?));
            }
        }
    })?;
    Ok((next, mlua::Value::Nil, mlua::Value::Nil))
}
