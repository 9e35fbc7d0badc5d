//! Messages of scalars straight from and onto a Lua stack, with no mlua value in
//! between: nil, booleans, integers, floats and strings (the same values the exporter
//! copies for them, `transfer/export.rs`), and channel and process handles (shared by
//! reference, as the exporter does). A handle is pushed only as the userdata the
//! receiving state already has for it (its interning cache, `intern.rs`); a message
//! with a handle new to the state is imported by the general path (`take_pending`),
//! which makes the userdata. Anything else is not handled here. A string is copied
//! once into the message (inline when short, `transfer/string.rs`) and once into the
//! receiving state: a short one without zero bytes as a C string, which Lua finds in
//! its cache of API strings without hashing it again.

use super::handles::{Handle, handle_at};
use crate::intern::HANDLES_KEY;
use crate::transfer::{Message, MessageString, Value, Values};
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;
use std::sync::Arc;

/// The values at stack positions `first..=last` of `state` as a message, or `None`
/// if one of them is not a scalar.
///
/// # Safety
/// `state` is a running thread; `first >= 1` and `last` is at most its top.
#[inline(always)]
pub(super) unsafe fn export(state: *mut lua_State, first: c_int, last: c_int) -> Option<Message> {
    // SAFETY: positions within the stack of the running thread.
    unsafe {
        let mut values = Values::new();
        for index in first..=last {
            values.push(scalar_at(state, index)?);
        }
        Some(Message::of(values))
    }
}

/// The scalar or handle at `index`, or `None`.
///
/// # Safety
/// `index` is a valid position of the running thread `state`, a process's (whose
/// handles' user values are guarded, `native`'s invariants).
#[inline(always)]
unsafe fn scalar_at(state: *mut lua_State, index: c_int) -> Option<Value> {
    // SAFETY: reads of a valid position, each for the type it was found to have; a
    // string's bytes are copied before anything can collect it; a handle's address
    // is that of the object whose Arc the handle (on the stack) holds, so counting
    // one more reference to it is sound.
    unsafe {
        let kind = ffi::lua_type(state, index);
        // Integers first: the most common payload, tested before the others.
        if kind == ffi::LUA_TNUMBER && ffi::lua_isinteger(state, index) != 0 {
            return Some(Value::Integer(ffi::lua_tointeger(state, index)));
        }
        Some(match kind {
            ffi::LUA_TNIL => Value::Nil,
            ffi::LUA_TBOOLEAN => Value::Boolean(ffi::lua_toboolean(state, index) != 0),
            ffi::LUA_TNUMBER => Value::Number(ffi::lua_tonumber(state, index)),
            ffi::LUA_TSTRING => {
                let mut length = 0;
                let bytes = ffi::lua_tolstring(state, index, &mut length);
                Value::String(MessageString::new(std::slice::from_raw_parts(
                    bytes.cast::<u8>(),
                    length,
                )))
            }
            ffi::LUA_TUSERDATA => match handle_at(state, index)? {
                Handle::Channel(address) => {
                    Arc::increment_strong_count(address);
                    Value::Channel(Arc::from_raw(address))
                }
                Handle::Process(address) => {
                    Arc::increment_strong_count(address);
                    Value::Process(Arc::from_raw(address))
                }
            },
            _ => return None,
        })
    }
}

/// Whether every value of `message` is a scalar or a handle, which [`push`] can
/// push (handles: if the state has their userdata).
#[inline]
pub(super) fn fits(message: &Message) -> bool {
    message.tables.is_empty()
        && message.values.iter().all(|value| {
            matches!(
                value,
                Value::Nil
                    | Value::Boolean(_)
                    | Value::Integer(_)
                    | Value::Number(_)
                    | Value::String(_)
                    | Value::Channel(_)
                    | Value::Process(_)
            )
        })
}

/// Pushes the value of `message` when it holds one value, an integer or a short
/// string with no zero byte (pushed as a C string, as [`push`] pushes it), and no
/// table: the message then owns nothing (`Message::owns_nothing`). Returns whether
/// it pushed it; otherwise nothing was pushed.
///
/// # Safety
/// As [`push`].
#[inline(always)]
pub(super) unsafe fn push_single(state: *mut lua_State, message: &Message) -> bool {
    let [value] = &message.values[..] else {
        return false;
    };
    if !message.tables.is_empty() {
        return false;
    }
    // SAFETY: the caller's contract; one value, within the room a C function has.
    unsafe {
        match value {
            Value::Integer(i) => ffi::lua_pushinteger(state, *i),
            Value::String(string) => match string.as_c_str() {
                Some(text) => {
                    ffi::lua_pushstring(state, text.as_ptr());
                }
                None => return false,
            },
            _ => return false,
        }
    }
    true
}

/// Pushes the values of `message` (see [`fits`]); returns how many, or `None`,
/// having pushed nothing, when the state has no userdata yet for a handle in it.
///
/// # Safety
/// `state` is the running thread of a C function (a stack overflow raises an error),
/// whose stack holds no more than it held when called (its arguments, and the user
/// value of its handle, `handles.rs`'s `call_handle`) or resumed.
#[inline]
pub(super) unsafe fn push(state: *mut lua_State, message: &Message) -> Option<c_int> {
    let count = message.values.len() as c_int;
    // SAFETY: room is made first (luaL_checkstack raises if it cannot be), unless
    // the values (with the interning cache and a handle's user value, at most
    // `LUA_MINSTACK / 2 + 2`) fit in the `LUA_MINSTACK` slots Lua guarantees a C
    // function above what it was called or resumed with; every push
    // copies its value into Lua; the cache is removed from the stack at the end, or
    // everything pushed is popped when a handle is missing.
    unsafe {
        if count > ffi::LUA_MINSTACK / 2 {
            ffi::luaL_checkstack(state, count + 1, c"too many values to receive".as_ptr());
        }
        // Where the cache goes (just below the values), found at the first handle:
        // the stack's top is read only for a message that holds one.
        let mut cache = 0;
        for (pushed, value) in message.values.iter().enumerate() {
            // Integers first, as in `scalar_at`.
            if let Value::Integer(i) = value {
                ffi::lua_pushinteger(state, *i);
                continue;
            }
            let address = match value {
                Value::Boolean(b) => {
                    ffi::lua_pushboolean(state, c_int::from(*b));
                    continue;
                }
                Value::Number(n) => {
                    ffi::lua_pushnumber(state, *n);
                    continue;
                }
                Value::String(string) => {
                    // A C string is found in Lua's cache of API strings without
                    // a hash when received at the same place again (`string.rs`).
                    match string.as_c_str() {
                        Some(text) => ffi::lua_pushstring(state, text.as_ptr()),
                        None => ffi::lua_pushlstring(state, string.as_ptr().cast(), string.len()),
                    };
                    continue;
                }
                Value::Channel(channel) => Arc::as_ptr(channel).cast::<std::ffi::c_void>(),
                Value::Process(process) => Arc::as_ptr(process).cast::<std::ffi::c_void>(),
                _ => {
                    ffi::lua_pushnil(state);
                    continue;
                }
            };
            if cache == 0 {
                // The cache goes below the values: it is removed at the end.
                cache = ffi::lua_gettop(state) - pushed as c_int + 1;
                ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, HANDLES_KEY.as_ptr());
                ffi::lua_rotate(state, cache, 1);
            }
            if ffi::lua_type(state, cache) != ffi::LUA_TTABLE
                || ffi::lua_rawgetp(state, cache, address) != ffi::LUA_TUSERDATA
            {
                ffi::lua_settop(state, cache - 1);
                return None;
            }
        }
        if cache != 0 {
            ffi::lua_rotate(state, cache, -1);
            ffi::lua_pop(state, 1);
        }
    }
    Some(count)
}
