//! `lutra.move(t)`: hands a table to another process without the sender keeping it
//! (seed 002's "send by move").
//!
//! # Protocol
//! 1. `lutra.move(t)` checks that `t` is a plain table that was not moved yet and
//!    returns a [`MoveMarker`] (a userdata whose user value is `t`); `t` is untouched.
//! 2. Exporting a message that contains the marker exports `t` in its place (deep
//!    copy, like any table) and notes `t` in a [`Moves`] list.
//! 3. Only when the whole message has been exported — and, for mailbox sends, queued —
//!    are the moves committed: each noted table is emptied (raw) and given the moved
//!    metatable, whose every access raises "this table was moved to another process
//!    (lutra.move)". If export fails, nothing is moved.
//!
//! # Invariants
//! - A moved table has the moved metatable (protected: `setmetatable` refuses to
//!   change it) and no entries; exporting it (or a marker for it) is refused.
//! - The move is shallow in ownership: `t` itself is given away; sub-tables are
//!   copied with it and stay usable through any other reference the sender holds.

use mlua::{Lua, Table, UserData, UserDataFields, UserDataMethods};

/// Registry key of the metatable that moved tables get (built by `transfer.lua`).
pub(crate) const MOVED_METATABLE_KEY: &str = "lutra.moved_metatable";

/// What every access to a moved table raises.
pub(crate) const MOVED_MESSAGE: &str = "this table was moved to another process (lutra.move)";

/// The userdata `lutra.move(t)` returns; its user value is `t`.
pub(crate) struct MoveMarker;

impl UserData for MoveMarker {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_meta_field("__name", "lutra.move");
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method("__tostring", |_, _, ()| Ok("lutra.move marker"));
    }
}

/// Makes the marker for `table`, or says why it cannot be moved.
pub(crate) fn marker(lua: &Lua, table: &Table) -> mlua::Result<Result<mlua::AnyUserData, String>> {
    if is_moved(lua, table) {
        return Ok(Err(format!(
            "bad argument #1 to 'move' ({MOVED_MESSAGE} already)"
        )));
    }
    if table.to_pointer() == lua.globals().to_pointer() {
        return Ok(Err(
            "bad argument #1 to 'move' (the globals table cannot be moved)".into(),
        ));
    }
    let marker = lua.create_userdata(MoveMarker)?;
    marker.set_user_value(table)?;
    Ok(Ok(marker))
}

/// Whether `table` was moved away.
pub(crate) fn is_moved(lua: &Lua, table: &Table) -> bool {
    let Some(meta) = table.metatable() else {
        return false;
    };
    lua.named_registry_value::<Table>(MOVED_METATABLE_KEY)
        .is_ok_and(|moved| moved.to_pointer() == meta.to_pointer())
}

/// Tables exported through markers, waiting for the send to be committed.
#[derive(Default)]
#[must_use = "moves happen only when committed"]
pub(crate) struct Moves {
    tables: Vec<Table>,
}

impl Moves {
    /// Notes `table` (once).
    pub(crate) fn note(&mut self, table: &Table) {
        if !self
            .tables
            .iter()
            .any(|t| t.to_pointer() == table.to_pointer())
        {
            self.tables.push(table.clone());
        }
    }

    /// Empties every noted table and marks it moved.
    pub(crate) fn commit(self, lua: &Lua) -> mlua::Result<()> {
        if self.tables.is_empty() {
            return Ok(());
        }
        let moved: Table = lua.named_registry_value(MOVED_METATABLE_KEY)?;
        for table in self.tables {
            table.clear()?;
            table.set_metatable(Some(moved.clone()))?;
        }
        Ok(())
    }
}
