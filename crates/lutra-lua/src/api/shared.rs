//! Raw functions of shared tables and transactions, looped over and wrapped by
//! `shared.lua`: none blocks (a `retry` answers "retry" and the Lua loop parks).

use crate::api::{RawEntry, bad_argument, failure, function, success};
use crate::atomic::{TxContext, aborted, driver};
use crate::process::ProcessContext;
use crate::shared::SharedHandle;
use crate::shared::handle::{self, SHARED_NEWINDEX_KEY};
use mlua::{AnyUserData, Function, Lua, MultiValue};

/// Gives `lua` its transaction context (the raw functions below need it).
pub(super) fn install(lua: &Lua) -> mlua::Result<()> {
    let engine = ProcessContext::of(lua)?.runtime.tm.clone();
    lua.set_app_data(TxContext::new(engine));
    Ok(())
}

/// The raw functions of this module (made on first use, see [`super::RawEntry`]).
pub(super) const RAW: &[RawEntry] = &[
    ("shared_new", |lua| function(lua, shared_new)),
    ("shared_set", |lua| function(lua, shared_set)),
    ("is_shared", |lua| {
        function(lua, |_, v: mlua::Value| Ok(is_shared(&v)))
    }),
    ("atomic_run", |lua| function(lua, driver::run)),
    ("atomic_again", |lua| function(lua, driver::again)),
    ("atomic_results", |lua| function(lua, driver::results)),
    ("atomic_site", |lua| {
        function(lua, |lua, name: String| {
            Ok(TxContext::of(lua)?.engine.site(&name))
        })
    }),
    ("atomic_doomed", |lua| function(lua, atomic_doomed)),
    ("atomic_retry", |lua| function(lua, atomic_retry)),
    ("atomic_irrevocable", |lua| {
        function(lua, atomic_irrevocable)
    }),
    ("atomic_checkpoint", |lua| function(lua, atomic_checkpoint)),
    ("atomic_depth", |lua| function(lua, atomic_depth)),
    ("atomic_close", |lua| function(lua, atomic_close)),
];

/// Stores the `__newindex` function of shared handles (from `shared.lua`).
pub(super) fn set_newindex(lua: &Lua, newindex: Function) -> mlua::Result<()> {
    lua.set_named_registry_value(SHARED_NEWINDEX_KEY, newindex)
}

fn is_shared(value: &mlua::Value) -> bool {
    matches!(value, mlua::Value::UserData(ud) if ud.is::<SharedHandle>())
}

/// `shared_new([t])`: a new shared table (a copy of `t`), or `nil, message`.
fn shared_new(lua: &Lua, source: mlua::Value) -> mlua::Result<MultiValue> {
    let source = match &source {
        mlua::Value::Nil => None,
        mlua::Value::Table(table) => Some(table),
        other if is_shared(other) => return success(lua, other.clone()),
        other => return failure(lua, bad_argument(1, "shared", "table or nil", other)),
    };
    match handle::new_from(lua, source)? {
        Ok(handle) => success(lua, handle),
        Err(problem) => failure(lua, problem),
    }
}

/// `shared_set(t, k, v)`: `true`, or `nil, message` when `k` or `v` cannot be stored.
fn shared_set(
    lua: &Lua,
    (table, key, value): (AnyUserData, mlua::Value, mlua::Value),
) -> mlua::Result<MultiValue> {
    let table = table.borrow::<SharedHandle>()?.0.clone();
    match handle::set(lua, &table, &key, &value)? {
        Ok(()) => success(lua, true),
        Err(problem) => failure(lua, problem),
    }
}

/// `atomic_doomed()`: the reason the running attempt is doomed (`"retry"`,
/// `"validation"`…), or nil.
fn atomic_doomed(lua: &Lua, (): ()) -> mlua::Result<Option<&'static str>> {
    let context = TxContext::of(lua)?;
    if !context.running.get() {
        return Ok(None);
    }
    context.with_attempt(|desc| desc.doomed().map(|reason| reason.name()))
}

/// `atomic_retry()`: dooms the running attempt with `retry` (the caller then raises).
fn atomic_retry(lua: &Lua, (): ()) -> mlua::Result<()> {
    TxContext::of(lua)?.with_attempt(|desc| {
        let _ = desc.transaction().retry::<()>();
    })
}

/// `atomic_irrevocable()`: makes the running attempt irrevocable (before output or
/// communication); raises the abort when that dooms it (it restarts irrevocable).
fn atomic_irrevocable(lua: &Lua, (): ()) -> mlua::Result<()> {
    // Asked even when the attempt is irrevocable already: one that the engine made
    // irrevocable (it outgrew its sets or kept aborting) may still `retry` and run
    // again, until the program's request makes it final.
    let result = TxContext::of(lua)?.with_attempt(|desc| desc.become_irrevocable())?;
    result.map_err(|abort| aborted(abort.reason()))
}

/// `atomic_checkpoint()`: opens a checkpoint; returns its depth (1 for the first).
fn atomic_checkpoint(lua: &Lua, (): ()) -> mlua::Result<usize> {
    let context = TxContext::of(lua)?;
    let checkpoint = context.with_attempt(|desc| desc.checkpoint())?;
    let mut checkpoints = context.checkpoints.borrow_mut();
    checkpoints.push(checkpoint);
    Ok(checkpoints.len())
}

/// `atomic_depth()`: how many checkpoints are open in the running attempt (0 outside
/// `lutra.atomic`).
fn atomic_depth(lua: &Lua, (): ()) -> mlua::Result<usize> {
    Ok(TxContext::of(lua)?.checkpoints.borrow().len())
}

/// `atomic_close(depth, undo, ...)`: closes the checkpoints down to `depth` (newest
/// first), undoing what was done since the one at `depth` when `undo` is true, and
/// returns its further arguments. A nested call ends by tail-calling it with its
/// results, so that once its checkpoint is kept no Lua code of the call is left to
/// run (and to raise: see `shared.lua`).
fn atomic_close(
    lua: &Lua,
    (depth, undo, results): (usize, bool, MultiValue),
) -> mlua::Result<MultiValue> {
    crate::transfer::moved::checkpoints_closed(lua, depth.max(1), undo);
    let context = TxContext::of(lua)?;
    loop {
        let checkpoint = {
            let mut checkpoints = context.checkpoints.borrow_mut();
            if checkpoints.len() < depth.max(1) {
                return Ok(results);
            }
            checkpoints.pop()
        };
        let Some(checkpoint) = checkpoint else {
            return Ok(results);
        };
        context.with_attempt(|desc| {
            if undo {
                desc.roll_back_to(checkpoint);
            } else {
                desc.keep(checkpoint);
            }
        })?;
    }
}
