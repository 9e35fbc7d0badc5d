//! A state's baseline: taken once, when the state is new (standard libraries and
//! `lutra` installed), and restored before the state runs another process, so that a
//! process never sees what an earlier one left behind. Both run through the Lua C API
//! (no Lua function walks the tables, no conversion per field).
//!
//! # What is restored
//! - Every table reachable from the globals in at most two steps (`_G` itself, the
//!   standard library tables, `lutra`, `package.loaded`, `package.preload`,
//!   `package.searchers`...), every table reachable from the registry in at most one
//!   step (Lutra's method tables, `_LOADED`, `_PRELOAD`...), the registry itself and
//!   the string metatable: each to its original fields and metatable. Through the
//!   registry: the default input and output files (`_IO_input`, `_IO_output`) and the
//!   globals table (`LUA_RIDX_GLOBALS`).
//! - The metatables of the basic types (as set with `debug.setmetatable`).
//! - The garbage collector's mode (incremental, default parameters, running); the
//!   random seed (re-seeded).
//!
//! # What is not restored
//! - The registry's entries under light-userdata keys and integer keys above
//!   `LUA_RIDX_LAST`: they are mlua's references (userdata metatables, registry
//!   values, the free list of `luaL_ref`), which mlua caches outside Lua.
//! - Tables deeper than the steps above, and state outside Lua (files left open are
//!   closed when collected; a C library loaded by `package.loadlib` stays loaded; the
//!   C locale is shared by the whole OS process).
//!
//! # Layout of the snapshot (an array in the registry under [`BASELINE_KEY`])
//! - `[1]`: the original `math.randomseed` (or nil).
//! - `[2 ..= 8]`: the metatables of the basic types, in the order of [`push_sample`].
//! - From `[9]` on, one record of five slots per table: the table, a copy of its
//!   fields (skipping the registry's mlua keys), its metatable, the number of
//!   fields in the copy, and the table's fingerprint (`fingerprint.rs`: a string, or
//!   nil for the registry, a weak table, or a Lua whose layout is not known). The
//!   copy of a weak table is weak in the same way, so that the snapshot keeps alive
//!   nothing the table itself would not.
//!
//! # The restore of an untouched table
//! A table whose fingerprint is what the record holds has the fields of its copy
//! (`fingerprint.rs`'s invariants: the copy keeps the values alive), and is not
//! walked: most tables of the baseline are never touched by a process. A table that
//! is walked gets a fresh fingerprint once restored (a restored table may be laid
//! out otherwise than when the snapshot was taken, with the same fields).
//!
//! # Invariants
//! - The snapshot array is in the registry before the registry is copied, so it is a
//!   field of the baseline; it is itself not snapshotted (it is marked seen first).
//! - Both walks run inside mlua's protected call (`exec_raw`): a Lua error (out of
//!   memory, a changed snapshot) unwinds only frames that own nothing.
//! - Lua code can reach the snapshot (`debug.getregistry()`), and so defeat the
//!   restore, as the debug library defeats isolation in other ways; but it cannot
//!   make the restore misuse the C API: the restore checks the type of every slot it
//!   relies on and raises an error otherwise (the state is then dropped, not pooled).

use mlua::Lua;
use mlua::ffi::{self, lua_Integer, lua_State};
use std::ffi::c_int;

/// Registry key of the snapshot.
const BASELINE_KEY: &std::ffi::CStr = c"lutra.baseline";

/// Slot of the original `math.randomseed`.
const RANDOMSEED: lua_Integer = 1;
/// First slot of the basic types' metatables.
const TYPE_METAS: lua_Integer = 2;
/// Basic types with a metatable per type (samples pushed by [`push_sample`]).
const TYPES: lua_Integer = 7;
/// The string among the samples of [`push_sample`].
const STRING_SAMPLE: lua_Integer = 4;
/// First slot of the records.
const RECORDS: lua_Integer = TYPE_METAS + TYPES;
/// Slots per record: table, copy, metatable, field count, fingerprint.
const RECORD: lua_Integer = 5;

/// Stack slots the walks use at most.
const STACK: c_int = 24;

/// Takes the baseline of a new state (`pool.rs`, step 1).
pub(crate) fn snapshot(lua: &Lua) -> mlua::Result<()> {
    // SAFETY: `exec_raw` runs the closure in a protected call on `lua`'s stack;
    // `snapshot_raw` keeps its stack balanced and owns nothing Rust would drop.
    unsafe { lua.exec_raw((), |state| snapshot_raw(state)) }
}

/// Restores the baseline taken by [`snapshot`] (`pool.rs`, step 2).
pub(crate) fn restore(lua: &Lua) -> mlua::Result<()> {
    // SAFETY: as in `snapshot`.
    unsafe { lua.exec_raw((), |state| restore_raw(state)) }
}

/// Where a snapshot is being written: the stack slots of the snapshot array and of the
/// set of tables already recorded, and the last slot written.
struct Writer {
    snapshot: c_int,
    seen: c_int,
    last: lua_Integer,
}

/// Writes the snapshot (module header) into the registry.
///
/// # Safety
/// `state` is a live Lua state inside a protected call.
unsafe fn snapshot_raw(state: *mut lua_State) {
    // SAFETY: calls on a live state in a protected call, each with the stack slots it
    // needs (checked first); every push is popped before returning.
    unsafe {
        ffi::luaL_checkstack(state, STACK, c"baseline".as_ptr());
        ffi::lua_createtable(state, 128, 0);
        let snapshot = ffi::lua_gettop(state);
        ffi::lua_pushvalue(state, snapshot);
        ffi::lua_setfield(state, ffi::LUA_REGISTRYINDEX, BASELINE_KEY.as_ptr());
        ffi::lua_createtable(state, 0, 64);
        let seen = ffi::lua_gettop(state);
        ffi::lua_pushvalue(state, snapshot);
        ffi::lua_pushboolean(state, 1);
        ffi::lua_rawset(state, seen);
        let mut writer = Writer {
            snapshot,
            seen,
            last: RECORDS - 1,
        };

        ffi::lua_rawgeti(state, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_GLOBALS);
        let globals = ffi::lua_gettop(state);
        if field(state, globals, c"math") == ffi::LUA_TTABLE {
            field(state, -1, c"randomseed");
            ffi::lua_rawseti(state, snapshot, RANDOMSEED);
        }
        ffi::lua_pop(state, 1);
        for i in 0..TYPES {
            push_sample(state, i);
            if ffi::lua_getmetatable(state, -1) != 0 {
                ffi::lua_rawseti(state, snapshot, TYPE_METAS + i);
            }
            ffi::lua_pop(state, 1);
        }

        record_reachable(state, &mut writer, globals, 2);
        ffi::lua_pop(state, 1);
        record_reachable(state, &mut writer, ffi::LUA_REGISTRYINDEX, 1);
        push_sample(state, STRING_SAMPLE);
        if ffi::lua_getmetatable(state, -1) != 0 {
            record_reachable(state, &mut writer, ffi::lua_gettop(state), 0);
            ffi::lua_pop(state, 1);
        }
        ffi::lua_pop(state, 3);
    }
}

/// Pushes a value of the `i`-th basic type with a metatable per type: nil, boolean,
/// light userdata, number, string, function, thread.
///
/// # Safety
/// `state` is live and has a free stack slot.
unsafe fn push_sample(state: *mut lua_State, i: lua_Integer) {
    // SAFETY: pushes one plain value (the caller's contract).
    unsafe {
        match i {
            0 => ffi::lua_pushnil(state),
            1 => ffi::lua_pushboolean(state, 0),
            2 => ffi::lua_pushlightuserdata(state, std::ptr::null_mut()),
            3 => ffi::lua_pushinteger(state, 0),
            STRING_SAMPLE => {
                ffi::lua_pushstring(state, c"".as_ptr());
            }
            5 => ffi::lua_pushcfunction(state, no_op),
            _ => {
                ffi::lua_pushthread(state);
            }
        }
    }
}

/// The function sample of [`push_sample`].
unsafe extern "C-unwind" fn no_op(_: *mut lua_State) -> c_int {
    0
}

/// Pushes the raw field `name` of the table at `table`; answers its type.
///
/// # Safety
/// `state` is live, `table` a table's index, and a stack slot is free.
unsafe fn field(state: *mut lua_State, table: c_int, name: &std::ffi::CStr) -> c_int {
    // SAFETY: the caller's contract; the key is a pushed string.
    unsafe {
        let table = ffi::lua_absindex(state, table);
        ffi::lua_pushstring(state, name.as_ptr());
        ffi::lua_rawget(state, table)
    }
}

/// Whether the key at `key` of the registry is mlua's (module header): a light
/// userdata or an integer above `LUA_RIDX_LAST`.
///
/// # Safety
/// `state` is live and `key` a valid index.
unsafe fn is_mlua_key(state: *mut lua_State, key: c_int) -> bool {
    // SAFETY: reads a value at a valid index (the caller's contract).
    unsafe {
        match ffi::lua_type(state, key) {
            ffi::LUA_TLIGHTUSERDATA => true,
            ffi::LUA_TNUMBER if ffi::lua_isinteger(state, key) != 0 => {
                ffi::lua_tointeger(state, key) > ffi::LUA_RIDX_LAST
            }
            _ => false,
        }
    }
}

/// Records the table at `table` (unless it has a record), and, `depth` steps deep,
/// the tables among its values, in one traversal.
///
/// # Safety
/// Inside [`snapshot_raw`]: `table` is a table's absolute (or pseudo) index.
unsafe fn record_reachable(state: *mut lua_State, writer: &mut Writer, table: c_int, depth: u32) {
    // SAFETY: the caller's contract; the traversal keeps the key on top between
    // `lua_next` calls, the fields it leaves below are popped once copied, each field
    // gets its stack room first, and everything pushed is popped or stored.
    unsafe {
        if !mark_seen(state, writer, table) {
            return;
        }
        let registry = table == ffi::LUA_REGISTRYINDEX;
        // One traversal leaves the fields on the stack (key, value, key, value... above
        // `base`), then the copy is made at its size from them.
        let base = ffi::lua_gettop(state);
        ffi::lua_pushnil(state);
        while ffi::lua_next(state, table) != 0 {
            if registry && is_mlua_key(state, -2) {
                ffi::lua_pop(state, 1);
                continue;
            }
            if depth > 0 && ffi::lua_type(state, -1) == ffi::LUA_TTABLE {
                record_reachable(state, writer, ffi::lua_gettop(state), depth - 1);
            }
            ffi::luaL_checkstack(state, STACK, c"baseline".as_ptr());
            ffi::lua_pushvalue(state, -2);
        }
        let count = (ffi::lua_gettop(state) - base) / 2;
        ffi::lua_createtable(state, 0, count);
        for field in 0..count {
            ffi::lua_pushvalue(state, base + 2 * field + 1);
            ffi::lua_pushvalue(state, base + 2 * field + 2);
            ffi::lua_rawset(state, -3);
        }
        ffi::lua_insert(state, base + 1);
        ffi::lua_settop(state, base + 1);
        let copy = base + 1;
        let count = lua_Integer::from(count);
        push_copy_meta(state, table, copy);
        ffi::lua_pushvalue(state, table);
        ffi::lua_rawseti(state, writer.snapshot, writer.last + 1);
        ffi::lua_pushvalue(state, copy);
        ffi::lua_rawseti(state, writer.snapshot, writer.last + 2);
        ffi::lua_rawseti(state, writer.snapshot, writer.last + 3);
        ffi::lua_pushinteger(state, count);
        ffi::lua_rawseti(state, writer.snapshot, writer.last + 4);
        if !registry && ffi::lua_getmetatable(state, copy) == 0 {
            push_fingerprint(state, table);
            ffi::lua_rawseti(state, writer.snapshot, writer.last + 5);
        } else if !registry {
            ffi::lua_pop(state, 1);
        }
        ffi::lua_pop(state, 1);
        writer.last += RECORD;
    }
}

/// Pushes the fingerprint of the table at `table` as a string (nil when the layout
/// is not known).
///
/// # Safety
/// `state` is live, inside a protected call, `table` a table's index, with four free
/// stack slots.
unsafe fn push_fingerprint(state: *mut lua_State, table: c_int) {
    // SAFETY: the caller's contract.
    unsafe {
        match super::fingerprint::of(state, table) {
            Some(print) => {
                ffi::lua_pushlstring(state, print.as_ptr().cast(), print.len());
            }
            None => ffi::lua_pushnil(state),
        }
    }
}

/// Whether the table at `table` has the fingerprint at `print` (a string).
///
/// # Safety
/// As [`push_fingerprint`]; `print` is a valid index.
unsafe fn fingerprint_is(state: *mut lua_State, table: c_int, print: c_int) -> bool {
    // SAFETY: the caller's contract; the string's bytes are read while it is on
    // the stack.
    unsafe {
        let Some(now) = super::fingerprint::of(state, table) else {
            return false;
        };
        let mut length = 0;
        let bytes = ffi::lua_tolstring(state, print, &mut length);
        !bytes.is_null() && std::slice::from_raw_parts(bytes.cast::<u8>(), length) == &now[..]
    }
}

/// Adds the table at `table` to the set of recorded tables; answers whether it was
/// not there yet.
///
/// # Safety
/// As [`record_reachable`].
unsafe fn mark_seen(state: *mut lua_State, writer: &Writer, table: c_int) -> bool {
    // SAFETY: as `record_reachable`.
    unsafe {
        ffi::lua_pushvalue(state, table);
        let seen = ffi::lua_rawget(state, writer.seen) != ffi::LUA_TNIL;
        ffi::lua_pop(state, 1);
        if !seen {
            ffi::lua_pushvalue(state, table);
            ffi::lua_pushboolean(state, 1);
            ffi::lua_rawset(state, writer.seen);
        }
        !seen
    }
}

/// Pushes the metatable of the table at `table` (nil if none); when it makes the
/// table weak, gives the copy at `copy` a metatable of the same mode.
///
/// # Safety
/// As [`record_reachable`].
unsafe fn push_copy_meta(state: *mut lua_State, table: c_int, copy: c_int) {
    // SAFETY: as `record_reachable`.
    unsafe {
        if ffi::lua_getmetatable(state, table) == 0 {
            ffi::lua_pushnil(state);
        } else if field(state, -1, c"__mode") == ffi::LUA_TSTRING {
            ffi::lua_createtable(state, 0, 1);
            ffi::lua_insert(state, -2);
            ffi::lua_setfield(state, -2, c"__mode".as_ptr());
            ffi::lua_setmetatable(state, copy);
        } else {
            ffi::lua_pop(state, 1);
        }
    }
}

/// Restores what the snapshot in the registry records (module header).
///
/// # Safety
/// `state` is a live Lua state inside a protected call, whose baseline was taken.
unsafe fn restore_raw(state: *mut lua_State) {
    // SAFETY: calls on a live state in a protected call, each with the stack slots it
    // needs (checked first); every push is popped before returning.
    unsafe {
        ffi::luaL_checkstack(state, STACK, c"baseline".as_ptr());
        if field(state, ffi::LUA_REGISTRYINDEX, BASELINE_KEY) != ffi::LUA_TTABLE {
            changed(state);
        }
        let snapshot = ffi::lua_gettop(state);
        for i in 0..TYPES {
            push_sample(state, i);
            if !is_table_or_nil(ffi::lua_rawgeti(state, snapshot, TYPE_METAS + i)) {
                changed(state);
            }
            ffi::lua_setmetatable(state, -2);
            ffi::lua_pop(state, 1);
        }
        let mut slot = RECORDS;
        while ffi::lua_rawgeti(state, snapshot, slot) != ffi::LUA_TNIL {
            let table = ffi::lua_gettop(state);
            if ffi::lua_type(state, table) != ffi::LUA_TTABLE
                || ffi::lua_rawgeti(state, snapshot, slot + 1) != ffi::LUA_TTABLE
                || !is_table_or_nil(ffi::lua_rawgeti(state, snapshot, slot + 2))
            {
                changed(state);
            }
            ffi::lua_rawgeti(state, snapshot, slot + 3);
            let count = ffi::lua_tointeger(state, -1);
            ffi::lua_pop(state, 1);
            ffi::lua_setmetatable(state, table);
            let registry = ffi::lua_rawequal(state, table, ffi::LUA_REGISTRYINDEX) != 0;
            let printed = ffi::lua_rawgeti(state, snapshot, slot + 4) == ffi::LUA_TSTRING;
            if !(printed && fingerprint_is(state, table, table + 2)) {
                restore_fields(state, table, table + 1, count, registry);
                if printed {
                    push_fingerprint(state, table);
                    ffi::lua_rawseti(state, snapshot, slot + 4);
                }
            }
            ffi::lua_pop(state, 3);
            slot += RECORD;
        }
        ffi::lua_pop(state, 1);
        // Restarting sets the collector's debt to zero (a cycle starts at the next
        // allocation): only a stopped collector is restarted.
        if ffi::lua_gc(state, ffi::LUA_GCISRUNNING) == 0 {
            ffi::lua_gc(state, ffi::LUA_GCRESTART);
        }
        ffi::lua_gc(
            state,
            ffi::LUA_GCINC,
            200 as c_int,
            100 as c_int,
            13 as c_int,
        );
        if ffi::lua_rawgeti(state, snapshot, RANDOMSEED) == ffi::LUA_TFUNCTION {
            ffi::lua_call(state, 0, 0);
        } else {
            ffi::lua_pop(state, 1);
        }
        ffi::lua_pop(state, 1);
    }
}

/// Whether a value of type `kind` can be given as a metatable.
fn is_table_or_nil(kind: c_int) -> bool {
    kind == ffi::LUA_TTABLE || kind == ffi::LUA_TNIL
}

/// Raises the error of a snapshot that Lua code changed (module invariants).
///
/// # Safety
/// Inside [`restore_raw`], with a free stack slot.
unsafe fn changed(state: *mut lua_State) -> ! {
    // SAFETY: the caller's contract; the protected call catches the error.
    unsafe {
        ffi::lua_pushstring(state, c"the baseline of this state was changed".as_ptr());
        ffi::lua_error(state)
    }
}

/// Gives the table at `table` the fields of its copy at `copy` (`count` of them),
/// leaving the registry's mlua keys alone when `registry`. One traversal of the
/// table clears the fields the copy lacks and sets the ones that differ; the copy is
/// walked only if the table lost some of its fields.
///
/// # Safety
/// Inside [`restore_raw`]: `table` and `copy` are absolute indices of tables.
unsafe fn restore_fields(
    state: *mut lua_State,
    table: c_int,
    copy: c_int,
    count: lua_Integer,
    registry: bool,
) {
    // SAFETY: as `restore_raw`; during the traversal only existing fields are
    // assigned or cleared, which `lua_next` allows.
    unsafe {
        let mut kept: lua_Integer = 0;
        ffi::lua_pushnil(state);
        while ffi::lua_next(state, table) != 0 {
            if registry && is_mlua_key(state, -2) {
                ffi::lua_pop(state, 1);
                continue;
            }
            ffi::lua_pushvalue(state, -2);
            if ffi::lua_rawget(state, copy) == ffi::LUA_TNIL {
                ffi::lua_pop(state, 2);
                ffi::lua_pushvalue(state, -1);
                ffi::lua_pushnil(state);
                ffi::lua_rawset(state, table);
                continue;
            }
            kept += 1;
            if ffi::lua_rawequal(state, -1, -2) == 0 {
                ffi::lua_pushvalue(state, -3);
                ffi::lua_insert(state, -2);
                ffi::lua_rawset(state, table);
            } else {
                ffi::lua_pop(state, 1);
            }
            ffi::lua_pop(state, 1);
        }
        if kept < count {
            put_back(state, table, copy);
        }
    }
}

/// Sets every field of the copy at `copy` that the table at `table` lacks.
///
/// # Safety
/// As [`restore_fields`].
unsafe fn put_back(state: *mut lua_State, table: c_int, copy: c_int) {
    // SAFETY: as `restore_fields`; the table is not traversed while it grows.
    unsafe {
        ffi::lua_pushnil(state);
        while ffi::lua_next(state, copy) != 0 {
            ffi::lua_pushvalue(state, -2);
            if ffi::lua_rawget(state, table) == ffi::LUA_TNIL {
                ffi::lua_pop(state, 1);
                ffi::lua_pushvalue(state, -2);
                ffi::lua_insert(state, -2);
                ffi::lua_rawset(state, table);
            } else {
                ffi::lua_pop(state, 2);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{restore, snapshot};
    use mlua::{Lua, LuaOptions, StdLib, UserData, UserDataMethods};

    fn state() -> Lua {
        // SAFETY: a test state; the debug library is what the checks use.
        unsafe { Lua::unsafe_new_with(StdLib::ALL, LuaOptions::new()) }
    }

    const DIRTY: &str = r#"
        leaked = {}
        string.leaked, math.pi = leaked, 3
        setmetatable(_G, { __index = function() return "ghost" end })
        setmetatable(string, { __index = leaked })
        getmetatable("").leaked = leaked
        debug.setmetatable(0, { __index = leaked })
        debug.setmetatable(nil, { __index = leaked })
        debug.getregistry().leaked = leaked
        debug.getregistry()._LOADED.leaked = leaked
        package.loaded.string = nil
        package.preload.leaked = function() return leaked end
        io.output(io.stderr)
        collectgarbage("stop")
    "#;

    const CLEAN: &str = r#"
        assert(rawget(_G, "leaked") == nil and getmetatable(_G) == nil)
        assert(string.leaked == nil and math.pi > 3.14 and getmetatable(string) == nil)
        assert(getmetatable("").leaked == nil and getmetatable("").__index == string)
        assert(debug.getmetatable(0) == nil and debug.getmetatable(nil) == nil)
        assert(debug.getregistry().leaked == nil and package.loaded.leaked == nil)
        assert(package.loaded.string == string and package.preload.leaked == nil)
        assert(io.output() == io.stdout)
        assert(collectgarbage("isrunning"))
    "#;

    #[test]
    fn restore_undoes_globals_libraries_registry_and_type_metatables() {
        let lua = state();
        snapshot(&lua).unwrap();
        for _ in 0..2 {
            lua.load(DIRTY).exec().unwrap();
            restore(&lua).unwrap();
            lua.load(CLEAN).exec().unwrap();
        }
    }

    #[test]
    fn empty_and_large_tables_are_restored() {
        let lua = state();
        lua.load("empty = {} big = {} for i = 1, 300 do big['k' .. i] = i end")
            .exec()
            .unwrap();
        snapshot(&lua).unwrap();
        lua.load("empty.x = 1 big.k1 = nil big.extra = true")
            .exec()
            .unwrap();
        restore(&lua).unwrap();
        lua.load(
            r#"
            assert(next(empty) == nil and big.k1 == 1 and big.extra == nil)
            local n = 0
            for _ in pairs(big) do n = n + 1 end
            assert(n == 300, n)
            "#,
        )
        .exec()
        .unwrap();
    }

    struct Later;
    impl UserData for Later {
        fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
            methods.add_method("answer", |_, _, ()| Ok(42));
        }
    }

    #[test]
    fn restore_keeps_mlua_references_made_after_the_snapshot() {
        let lua = state();
        snapshot(&lua).unwrap();
        let key = lua.create_registry_value("kept").unwrap();
        lua.globals().set("later", Later).unwrap();
        restore(&lua).unwrap();
        assert_eq!(lua.registry_value::<String>(&key).unwrap(), "kept");
        assert!(lua.globals().get::<mlua::Value>("later").unwrap().is_nil());
        lua.globals().set("later", Later).unwrap();
        let answer: i64 = lua.load("return later:answer()").eval().unwrap();
        assert_eq!(answer, 42);
    }

    #[test]
    fn the_snapshot_of_a_weak_table_is_weak() {
        let lua = state();
        lua.load(r#"debug.getregistry().cache = setmetatable({ x = {} }, { __mode = "v" })"#)
            .exec()
            .unwrap();
        snapshot(&lua).unwrap();
        lua.gc_collect().unwrap();
        let gone: bool = lua
            .load("return next(debug.getregistry().cache) == nil")
            .eval()
            .unwrap();
        assert!(gone, "the snapshot kept a weak table's value alive");
        restore(&lua).unwrap();
    }

    #[test]
    fn changed_values_and_added_removed_or_readded_keys_are_restored_again_and_again() {
        let lua = state();
        lua.load("t = { 1, 2, a = 1, b = 2, c = 3 } for i = 1, 40 do t['k' .. i] = i end")
            .exec()
            .unwrap();
        snapshot(&lua).unwrap();
        let check = r#"
            assert(t[1] == 1 and t[2] == 2 and t[3] == nil)
            assert(t.a == 1 and t.b == 2 and t.c == 3 and t.k40 == 40 and t.new == nil)
            local n = 0
            for _ in pairs(t) do n = n + 1 end
            assert(n == 45, n)
        "#;
        for change in [
            "",
            "t.b = 'changed'",
            "t.a = nil",
            "t.a = nil collectgarbage() t.a = 1",
            "t.new = true",
            "",
            "t[1], t[3] = 'one', 3",
            "for i = 1, 100 do t['more' .. i] = i end",
            "t.c = nil t.b = {} t.k1 = nil",
            "",
        ] {
            lua.load(change).exec().unwrap();
            restore(&lua).unwrap();
            lua.load(check).exec().unwrap();
        }
    }

    #[test]
    fn a_changed_snapshot_is_an_error() {
        for change in ["s[2] = 1", "s[9] = 1", "s[10] = true", "s[11] = print"] {
            let lua = state();
            snapshot(&lua).unwrap();
            lua.load(format!(
                r#"local s = debug.getregistry()["lutra.baseline"] {change}"#
            ))
            .exec()
            .unwrap();
            assert!(restore(&lua).is_err(), "{change}");
        }
    }
}
