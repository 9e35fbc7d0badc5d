//! A table's fingerprint: the bytes of its array part and its hash nodes (keys,
//! values, chain links), read from Lua 5.4's `Table` and `Node` structures
//! (`lobject.h`), so that the baseline's restore (`baseline.rs`) can tell that a
//! table nobody changed is unchanged without walking its fields with `lua_next`
//! (which was most of the restore's cost).
//!
//! # Invariants
//! - Equal fingerprints mean the same fields: every key and value is compared by
//!   its tag and its bits (a collectable one by its address), and the caller keeps
//!   the values alive meanwhile (the baseline's copy holds them), so an address
//!   cannot have been reused. Anything else (a field changed, added or removed; a
//!   rehash; the `#` operator's hint in `alimit`; a weak table's cleared entry) makes
//!   the fingerprints differ, and the caller falls back to the walk.
//! - The layout is checked once per OS process on a table built through the C API
//!   ([`layout_known`]); if the Lua linked in is laid out otherwise (the stock
//!   `lua5.4` the module runs in is another build), there are no fingerprints.
//! - Padding bytes are never read: each field is read at its offset.

use mlua::ffi::{self, lua_State};
use std::ffi::c_int;
use std::sync::atomic::{AtomicU8, Ordering};

/// `Table` (`lobject.h`, Lua 5.4, 64-bit): `lsizenode` (a byte), `alimit` (a 32-bit
/// unsigned), `array`, `node` and `lastfree` (pointers) at these offsets, after the
/// common header (`next`, `tt`, `marked`) and `flags`.
const FLAGS: usize = 10;
const LSIZENODE: usize = 11;
const ALIMIT: usize = 12;
const ARRAY: usize = 16;
const NODE: usize = 24;
const LASTFREE: usize = 32;
/// `flags`' bit that says `alimit` is not the array's real size (`BITRAS`).
const BITRAS: u8 = 1 << 7;

/// `TValue`: the value's bits, then its tag; 16 bytes.
const TVALUE: usize = 16;
/// `Node` (`NodeKey`): the value's bits and tag, the key's tag, `next`, the key's
/// bits; 24 bytes.
const NODE_SIZE: usize = 24;
const NODE_TT: usize = 8;
const NODE_KEY_TT: usize = 9;
const NODE_NEXT: usize = 12;
const NODE_KEY_VAL: usize = 16;

/// Lua 5.4's variant tags used by the layout check.
const VNUMINT: u8 = 0x03;
const VNUMFLT: u8 = 0x13;
const VTRUE: u8 = 0x11;
const VSHRSTR_COLLECTABLE: u8 = 0x44;

/// Whether the layout above is the Lua linked in: 0 unknown, 1 yes, 2 no.
static LAYOUT: AtomicU8 = AtomicU8::new(0);

/// The fingerprint of the table at `index` (see the module header), or `None` when
/// the layout is not known to be Lua 5.4's.
///
/// # Safety
/// `state` is a live Lua state inside a protected call, `index` a table's valid
/// index, with three free stack slots.
pub(crate) unsafe fn of(state: *mut lua_State, index: c_int) -> Option<Vec<u8>> {
    // SAFETY: the caller's contract.
    if !unsafe { layout_known(state) } {
        return None;
    }
    // SAFETY: a table's address, laid out as checked; read while nothing runs.
    Some(unsafe { read(ffi::lua_topointer(state, index).cast::<u8>()) })
}

/// Reads the fingerprint of the `Table` at `table`.
///
/// # Safety
/// `table` is a live Lua 5.4 `Table` laid out as the module's constants say.
unsafe fn read(table: *const u8) -> Vec<u8> {
    // SAFETY: every read is of a field at its offset in a live table, its node
    // array (`2^lsizenode` nodes unless it is the shared dummy node: `lastfree`
    // null) or its array part (its real size, as `luaH_realasize` computes it).
    unsafe {
        let flags = *table.add(FLAGS);
        let lsizenode = *table.add(LSIZENODE);
        let alimit = table.add(ALIMIT).cast::<u32>().read();
        let array = table.add(ARRAY).cast::<*const u8>().read();
        let node = table.add(NODE).cast::<*const u8>().read();
        let dummy = table.add(LASTFREE).cast::<*const u8>().read().is_null();
        let size = if flags & BITRAS == 0 || alimit.is_power_of_two() || alimit == 0 {
            alimit
        } else {
            alimit.next_power_of_two()
        };
        let nodes = if dummy { 0 } else { 1usize << lsizenode };
        let mut out = Vec::with_capacity(6 + 9 * size as usize + 22 * nodes);
        out.push(lsizenode);
        out.push(u8::from(dummy));
        out.extend_from_slice(&size.to_le_bytes());
        for slot in 0..size as usize {
            let value = array.add(slot * TVALUE);
            out.extend_from_slice(&value.cast::<u64>().read().to_le_bytes());
            out.push(*value.add(8));
        }
        for slot in 0..nodes {
            let n = node.add(slot * NODE_SIZE);
            out.extend_from_slice(&n.cast::<u64>().read().to_le_bytes());
            out.push(*n.add(NODE_TT));
            out.push(*n.add(NODE_KEY_TT));
            out.extend_from_slice(&n.add(NODE_NEXT).cast::<i32>().read().to_le_bytes());
            out.extend_from_slice(&n.add(NODE_KEY_VAL).cast::<u64>().read().to_le_bytes());
        }
        out
    }
}

/// Whether the Lua linked in lays tables out as the module's constants say: checked
/// once per OS process on a table built through the C API (an array part of two,
/// four nodes, known keys and values).
///
/// # Safety
/// As [`of`].
unsafe fn layout_known(state: *mut lua_State) -> bool {
    match LAYOUT.load(Ordering::Relaxed) {
        1 => return true,
        2 => return false,
        _ => {}
    }
    // SAFETY: the caller's contract; the sample table is popped before returning.
    // Its header is read only where a 64-bit Lua 5.4's `Table` (56 bytes) has it.
    let known = cfg!(target_pointer_width = "64") && unsafe { check_sample(state) };
    // ORDERING: Relaxed: every state checks the same layout; a race checks twice.
    LAYOUT.store(if known { 1 } else { 2 }, Ordering::Relaxed);
    known
}

/// Builds the sample table and reads it as the constants say.
///
/// # Safety
/// As [`of`].
unsafe fn check_sample(state: *mut lua_State) -> bool {
    // SAFETY: the caller's contract; reads stay inside the sample's structure as far
    // as the checks before each read establish it (a node array only when the header
    // says four nodes and a non-null array, and so on).
    unsafe {
        ffi::lua_createtable(state, 2, 4);
        ffi::lua_pushinteger(state, 42);
        ffi::lua_rawseti(state, -2, 1);
        ffi::lua_pushboolean(state, 1);
        ffi::lua_rawseti(state, -2, 2);
        ffi::lua_pushstring(state, c"lutra.fingerprint".as_ptr());
        let key = ffi::lua_topointer(state, -1) as usize;
        ffi::lua_pushnumber(state, 1.5);
        ffi::lua_rawset(state, -3);
        let table = ffi::lua_topointer(state, -1).cast::<u8>();
        let known = sample_reads_back(table, key);
        ffi::lua_pop(state, 1);
        known
    }
}

/// Whether `table` reads as the sample of [`check_sample`] (the key's address `key`).
///
/// # Safety
/// `table` is the sample, alive.
unsafe fn sample_reads_back(table: *const u8, key: usize) -> bool {
    // SAFETY: as `check_sample`.
    unsafe {
        let alimit = table.add(ALIMIT).cast::<u32>().read();
        let array = table.add(ARRAY).cast::<*const u8>().read();
        let node = table.add(NODE).cast::<*const u8>().read();
        let lastfree = table.add(LASTFREE).cast::<*const u8>().read();
        if *table.add(LSIZENODE) != 2 || alimit != 2 || array.is_null() || node.is_null() {
            return false;
        }
        if lastfree.is_null() || !(node..=node.add(4 * NODE_SIZE)).contains(&lastfree) {
            return false;
        }
        let first_ok = array.cast::<i64>().read() == 42 && *array.add(8) == VNUMINT;
        let second_ok = *array.add(TVALUE + 8) == VTRUE;
        let found = (0..4).any(|slot| {
            let n = node.add(slot * NODE_SIZE);
            *n.add(NODE_KEY_TT) == VSHRSTR_COLLECTABLE
                && n.add(NODE_KEY_VAL).cast::<usize>().read() == key
                && *n.add(NODE_TT) == VNUMFLT
                && n.cast::<u64>().read() == 1.5f64.to_bits()
        });
        first_ok && second_ok && found
    }
}

#[cfg(test)]
mod tests {
    use super::of;
    use mlua::{Lua, ffi};

    /// The fingerprints of the global `t` before and after running `change`.
    fn around(change: &str) -> (Vec<u8>, Vec<u8>) {
        let lua = Lua::new();
        lua.load("t = { 1, 2, 3, x = 'a', y = {} } for i = 1, 20 do t['k' .. i] = i end")
            .exec()
            .unwrap();
        let take = |lua: &Lua| -> mlua::LuaString {
            // SAFETY: a protected call on the state's stack, which returns the pushed
            // string.
            unsafe {
                lua.exec_raw((), |state| {
                    ffi::lua_getglobal(state, c"t".as_ptr());
                    let print = of(state, -1).expect("Lua 5.4's layout");
                    ffi::lua_pop(state, 1);
                    ffi::lua_pushlstring(state, print.as_ptr().cast(), print.len());
                })
                .unwrap()
            }
        };
        let before = take(&lua);
        lua.load(change).exec().unwrap();
        let after = take(&lua);
        (before.as_bytes().to_vec(), after.as_bytes().to_vec())
    }

    #[test]
    fn an_untouched_table_keeps_its_fingerprint() {
        let (before, after) = around("local _ = t.x, t[1], #t collectgarbage() u = {}");
        assert_eq!(before, after);
    }

    #[test]
    fn any_change_of_a_field_changes_the_fingerprint() {
        for change in [
            "t.x = 'b'",
            "t.y = {}",
            "t[2] = 2.0",
            "t.k1 = nil",
            "t.new = 1",
            "t[4] = 4",
            "t[1] = nil",
            "t.x = nil t.x = 'a' t.z = 1 t.z = nil",
        ] {
            let (before, after) = around(change);
            assert_ne!(before, after, "{change}");
        }
    }
}
