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
//! 4. A send that must wait for its receiver keeps its moves pending
//!    ([`Moves::defer`]) until it completes ([`commit_deferred`]); a send that fails
//!    or is withdrawn forgets them ([`forget_deferred`]), and `t` stays as it was.
//!
//! 5. Storing `lutra.move(t)` in a shared table (`s.k = lutra.move(t)`,
//!    `lutra.shared{k = lutra.move(t)}`) stores a copy of `t`'s contents (as for any
//!    plain table) and moves `t` once the store is committed: at once outside
//!    `lutra.atomic`, with the attempt inside it ([`note_in_attempt`]). An attempt
//!    that aborts, fails, or undoes the store (a nested `atomic` or `or_else` branch
//!    that fails) moves nothing: `t` stays as it was, and a re-run attempt moves it
//!    again.
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

    /// Whether no table was noted.
    pub(crate) fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// Keeps these moves in `lua` until the waiting send that carries them completes
    /// ([`commit_deferred`]) or fails ([`forget_deferred`]). A process waits in one
    /// send at a time: it parks while the send waits.
    pub(crate) fn defer(self, lua: &Lua) {
        if !self.is_empty() {
            lua.set_app_data(Deferred(self));
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

/// The moves of the send a process waits in (see [`Moves::defer`]).
struct Deferred(Moves);

/// Commits the moves of the waiting send (it completed), if any.
pub(crate) fn commit_deferred(lua: &Lua) -> mlua::Result<()> {
    match lua.remove_app_data::<Deferred>() {
        Some(Deferred(moves)) => moves.commit(lua),
        None => Ok(()),
    }
}

/// Forgets the moves of the waiting send (it failed): the tables stay as they were.
pub(crate) fn forget_deferred(lua: &Lua) {
    lua.remove_app_data::<Deferred>();
}

/// Moves noted by stores inside the running `atomic` attempt, each with the depth of
/// the checkpoint open when it was noted (0: none), committed with the attempt.
#[derive(Default)]
struct AttemptMoves(Vec<(Table, usize)>);

/// Notes `moves`, made by a store inside the running attempt at checkpoint `depth`:
/// they happen if the attempt commits ([`attempt_committed`]).
pub(crate) fn note_in_attempt(lua: &Lua, moves: Moves, depth: usize) {
    if moves.is_empty() {
        return;
    }
    if lua.app_data_ref::<AttemptMoves>().is_none() {
        lua.set_app_data(AttemptMoves::default());
    }
    if let Some(mut noted) = lua.app_data_mut::<AttemptMoves>() {
        noted
            .0
            .extend(moves.tables.into_iter().map(|table| (table, depth)));
    }
}

/// An attempt begins, or an `atomic` call ends: the moves noted by an attempt that
/// did not commit (aborted, failed) are forgotten.
pub(crate) fn forget_attempt_moves(lua: &Lua) {
    lua.remove_app_data::<AttemptMoves>();
}

/// The attempt committed: its moves happen.
pub(crate) fn attempt_committed(lua: &Lua) -> mlua::Result<()> {
    let Some(AttemptMoves(noted)) = lua.remove_app_data::<AttemptMoves>() else {
        return Ok(());
    };
    let mut moves = Moves::default();
    for (table, _) in &noted {
        if !is_moved(lua, table) {
            moves.note(table);
        }
    }
    moves.commit(lua)
}

/// The checkpoints from `depth` up are closed: the moves noted in them are forgotten
/// (`undo`) or kept by the enclosing checkpoint.
pub(crate) fn checkpoints_closed(lua: &Lua, depth: usize, undo: bool) {
    let Some(mut noted) = lua.app_data_mut::<AttemptMoves>() else {
        return;
    };
    if undo {
        noted.0.retain(|(_, at)| *at < depth);
    } else {
        for (_, at) in noted.0.iter_mut() {
            *at = (*at).min(depth.saturating_sub(1));
        }
    }
}

/// Forgets every pending move of `lua` (a send's, an attempt's): its process ended
/// and the state is reset for another, which must not move the first one's tables.
pub(crate) fn forget_all(lua: &Lua) {
    forget_deferred(lua);
    forget_attempt_moves(lua);
}
