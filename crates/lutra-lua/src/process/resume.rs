//! One resume of a process's main coroutine, straight through `lua_resume`: the
//! per-slice cost of mlua's `Thread::resume` (its lock, thread events, stack guard,
//! and a conversion of every yielded value) is paid only for the first slice, which
//! passes the process's arguments, and when the coroutine ends.
//!
//! # Invariants
//! - Only this process's task resumes its main coroutine, on one worker at a time
//!   (no other thread touches the state meanwhile: mlua's lock is not needed).
//! - A yield leaves the coroutine's stack as the yielder left it, minus the yielded
//!   values: a count hook's yield (`preempt.rs`) yields none and keeps the frame the
//!   hook interrupted, as mlua does for it; the prelude's relay and `lutra.yield`
//!   leave nothing more; a native call's park leaves its frame (its arguments, a
//!   handle's user value), which its continuation finds again, with any value it is
//!   resumed with on its top (noted `PARKED_IN_PLACE`: the continuation looks for
//!   one only while [`resume_cancelled`] resumes), except after the first slice,
//!   whose resume through mlua empties that frame (`ProcessContext::park_top`).
//! - A yield is a park when it yields `PARK` first (the prelude's relay, the Lua
//!   loops), or when a native call marked the context's `native_park` before it
//!   yielded no values (`api/native/perform.rs`); the mark is consumed at every
//!   yield, so it never outlives the yield it was set for.
//! - Resumes after the first pass no values (the yields return none), except in a
//!   process asked to cancel: one value, `CANCEL` (`cancel.rs`), which a yield inside
//!   the preemption hook discards as Lua discards every value resumed into a hook.

use crate::api::PARK;
use crate::process::state::named_context;
use mlua::ffi;
use mlua::{Lua, MultiValue, Thread};
use std::ffi::c_int;

/// How a resume ended.
pub(crate) enum Resumed {
    /// The coroutine yielded; `park`: it yielded `PARK` (a blocking call waits).
    Yielded { park: bool },
    /// The coroutine returned these values.
    Returned(MultiValue),
    /// The coroutine raised (outside the runner's own `xpcall`).
    Failed(mlua::Error),
}

/// Resumes `thread`, a suspended coroutine of `lua`, with no values.
///
/// # Safety
/// `thread` is a coroutine of `lua` that has started and yielded (not running, not
/// dead), resumed by its process's task alone (module invariants).
#[inline]
pub(crate) unsafe fn resume(lua: &Lua, thread: &Thread) -> Resumed {
    // SAFETY: the caller's contract.
    unsafe { resume_with(lua, thread, 0) }
}

/// Resumes `thread` as [`resume`] does, with the value `CANCEL` (a cancelled
/// process: its blocking call raises).
///
/// # Safety
/// As [`resume`].
#[cold]
pub(crate) unsafe fn resume_cancelled(lua: &Lua, thread: &Thread) -> Resumed {
    // SAFETY: room for the value is made first (a coroutine suspended in a hook may
    // have none in its frame); a coroutine that cannot grow is resumed with nothing
    // (its next safe point still raises: the hook, or the next park's `CANCEL`).
    unsafe {
        let state = thread.state();
        if ffi::lua_checkstack(state, 1) == 0 {
            return resume_with(lua, thread, 0);
        }
        ffi::lua_pushlightuserdata(state, crate::process::cancel::CANCEL);
        // A native call parked in place looks for the value only while this is set
        // (`ProcessContext::resuming_with_cancel`).
        let context = named_context(state);
        if let Some(context) = context {
            context.resuming_with_cancel.set(true);
        }
        let resumed = resume_with(lua, thread, 1);
        if let Some(context) = context {
            context.resuming_with_cancel.set(false);
        }
        resumed
    }
}

/// Resumes `thread` with the `arguments` values on its stack's top.
///
/// # Safety
/// As [`resume`]; `arguments` values were pushed on `thread`.
#[inline(always)]
unsafe fn resume_with(lua: &Lua, thread: &Thread, arguments: c_int) -> Resumed {
    let state = thread.state();
    let mut count: c_int = 0;
    // SAFETY: a suspended coroutine resumed with its arguments (a null `from` starts
    // its C-call count at zero); its results are read and popped, or moved to mlua.
    unsafe {
        let status = ffi::lua_resume(state, std::ptr::null_mut(), arguments, &mut count);
        match status {
            ffi::LUA_YIELD => {
                let marked = native_parked(state);
                if count == 0 {
                    return Resumed::Yielded { park: marked };
                }
                let park = ffi::lua_type(state, -count) == ffi::LUA_TLIGHTUSERDATA
                    && ffi::lua_touserdata(state, -count) == PARK;
                ffi::lua_pop(state, count);
                Resumed::Yielded { park }
            }
            ffi::LUA_OK => match take(lua, state, count) {
                Ok(values) => Resumed::Returned(values),
                Err(error) => Resumed::Failed(error),
            },
            _ => Resumed::Failed(raised(lua, state, status)),
        }
    }
}

/// Consumes the mark of a native call that parked `state`, the slice's main
/// coroutine, as it yielded (`ProcessContext::native_park`): whether its yield was
/// a park.
///
/// # Safety
/// `state` is the main coroutine of the slice, just returned from a resume (its
/// extra space names the slice's context, `state.rs`).
#[inline]
pub(crate) unsafe fn native_parked(state: *mut ffi::lua_State) -> bool {
    // SAFETY: the caller's contract.
    unsafe { named_context(state) }.is_some_and(|context| context.native_park.replace(false))
}

/// Notes that the frame of the native call parked on `state` is empty: mlua's
/// `Thread::resume` (the first slice's) empties the frame of a C function that
/// yielded, so a value the call is resumed with is then first on its stack
/// (`ProcessContext::park_top`).
///
/// # Safety
/// As [`native_parked`].
pub(crate) unsafe fn frame_emptied(state: *mut ffi::lua_State) {
    // SAFETY: the caller's contract.
    if let Some(context) = unsafe { named_context(state) } {
        context.park_top.set(0);
    }
}

/// The top `count` values of `state`, moved into mlua values.
///
/// # Safety
/// `state` is a thread of `lua` that is not running, with `count` values on top.
unsafe fn take(lua: &Lua, state: *mut ffi::lua_State, count: c_int) -> mlua::Result<MultiValue> {
    // SAFETY: the values move to mlua's protected call's stack, which makes room for
    // them first; mlua reads them off that stack as the call's results.
    unsafe {
        lua.exec_raw((), |main| {
            ffi::luaL_checkstack(main, count, c"too many results".as_ptr());
            ffi::lua_xmove(state, main, count);
        })
    }
}

/// The error the coroutine `state` died with (`status`): a memory error as such,
/// anything else as a runtime error with the coroutine's traceback, as mlua's resume
/// reports it.
///
/// # Safety
/// `state` is a thread of `lua` that has just died with its error object on top.
unsafe fn raised(lua: &Lua, state: *mut ffi::lua_State, status: c_int) -> mlua::Error {
    // SAFETY: the error object moves to mlua's protected call, where the traceback
    // is built (luaL_traceback reads the dead coroutine's frames).
    let message = unsafe {
        lua.exec_raw::<String>((), |main| {
            ffi::lua_xmove(state, main, 1);
            let text = ffi::luaL_tolstring(main, -1, std::ptr::null_mut());
            ffi::lua_remove(main, -2);
            if status != ffi::LUA_ERRMEM {
                ffi::luaL_traceback(main, state, text, 0);
                ffi::lua_remove(main, -2);
            }
        })
    };
    let message = message.unwrap_or_else(|error| error.to_string());
    if status == ffi::LUA_ERRMEM {
        mlua::Error::MemoryError(message)
    } else {
        mlua::Error::RuntimeError(message)
    }
}
