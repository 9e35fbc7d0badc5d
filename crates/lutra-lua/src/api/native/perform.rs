//! Doing what a native call decided: each step of a call returns an [`Action`],
//! decided in safe code, and [`perform`] carries it out on the Lua stack — pushes
//! the answer, yields to wait, raises an error or calls the fallback — with plain
//! values only, as the call's last act (it may longjmp: see the module's invariants).

use super::handles::context_of;
use super::{FALLBACK, TAKE_PENDING, scalar};
use crate::api::PARK;
use crate::process::state::{PARKED_IN_PLACE, named_context};
use crate::transfer::Message;
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;

/// What a native call does next.
pub(super) enum Action {
    /// Returns this answer.
    Return(Answer),
    /// Waits (the wait noted in the context's `parked`): yields `PARK`, and goes on
    /// in the continuation, given `ctx`.
    Park { ctx: ffi::lua_KContext },
    /// Raises this error at the caller's position.
    Raise(String),
    /// Calls the fallback with the first `args` arguments.
    Fallback { args: c_int },
}

/// What a native call answers.
pub(super) enum Answer {
    /// No values (`ch:send`).
    Nothing,
    /// `true` (`luaproc.send`).
    True,
    /// `nil, message` (luaproc's expected failures).
    NilAnd(String),
    /// A message of scalars.
    Values(Message),
    /// The message stashed in the context's `pending` (imported by `take_pending`).
    Pending,
}

/// Does `action` for the native call running on `state`, continuing with `k` if it
/// waits; returns the number of results.
///
/// # Safety
/// `state` runs a native closure of this module (its upvalues as the module says);
/// called as its last act (it may longjmp).
#[inline(always)]
pub(super) unsafe fn perform(
    state: *mut lua_State,
    action: Action,
    k: ffi::lua_KFunction,
) -> c_int {
    // SAFETY: stack operations on the running thread; every Rust value is moved out
    // (or dropped) before a call that may longjmp (module invariants).
    unsafe {
        // The common answers in place, read where the action lies, without a call or
        // a move of the answer: none (a send), and one integer or short string (a
        // receive), whose message owns nothing then and is forgotten with the action.
        match &action {
            Action::Return(Answer::Nothing) => return 0,
            Action::Return(Answer::Values(message)) if scalar::push_single(state, message) => {
                std::mem::forget(action);
                return 1;
            }
            _ => {}
        }
        match action {
            Action::Return(answer) => match answer_with(state, answer) {
                Ok(count) => count,
                Err(message) => raise(state, message),
            },
            Action::Park { ctx } => {
                // The slice's main coroutine yields straight to its task, which
                // reads the mark instead of a yielded `PARK` (`resume.rs`); its
                // frame stays as it is, its top not read: the continuation finds the
                // only value it can be resumed with on the stack's top
                // (`ProcessContext::park_top`, `PARKED_IN_PLACE`).
                if let Some(context) = named_context(state) {
                    context.park_top.set(PARKED_IN_PLACE);
                    context.native_park.set(true);
                    return ffi::lua_yieldk(state, 0, ctx, Some(k));
                }
                // Any other coroutine yields `PARK` to the prelude's relay, its frame
                // emptied: the relay's resume values are then the frame.
                ffi::lua_settop(state, 0);
                if let Some(context) = context_of(state) {
                    context.park_top.set(0);
                }
                ffi::lua_pushlightuserdata(state, PARK);
                ffi::lua_yieldk(state, 1, ctx, Some(k))
            }
            Action::Raise(message) => raise(state, message),
            Action::Fallback { args } => {
                ffi::lua_settop(state, args);
                ffi::lua_pushvalue(state, ffi::lua_upvalueindex(FALLBACK));
                ffi::lua_rotate(state, 1, 1);
                ffi::lua_callk(state, args, ffi::LUA_MULTRET, 0, Some(returned));
                ffi::lua_gettop(state)
            }
        }
    }
}

/// Raises `message` at the position of the running function's caller (`luaL_where`
/// level 1), as `luaL_error` does; the message is dropped before the jump.
///
/// # Safety
/// `state` is the running thread, with room for two values (LUA_MINSTACK); this
/// longjmps, so nothing Rust owns but `message` may be alive in the caller's frames.
pub(crate) unsafe fn raise<M: AsRef<str>>(state: *mut lua_State, message: M) -> ! {
    // SAFETY: the function's contract; Lua copies the text before `message` is dropped.
    unsafe {
        ffi::luaL_where(state, 1);
        let text = message.as_ref();
        ffi::lua_pushlstring(state, text.as_ptr().cast(), text.len());
        drop(message);
        ffi::lua_concat(state, 2);
        ffi::lua_error(state)
    }
}

/// Pushes `answer`; returns how many values, or the error to raise.
///
/// # Safety
/// As [`perform`].
#[inline]
unsafe fn answer_with(state: *mut lua_State, answer: Answer) -> Result<c_int, String> {
    // SAFETY: as in `perform`; the message is dropped before the call that imports a
    // pending one.
    unsafe {
        Ok(match answer {
            Answer::Nothing => 0,
            Answer::True => {
                ffi::lua_pushboolean(state, 1);
                1
            }
            Answer::NilAnd(message) => {
                ffi::lua_pushnil(state);
                ffi::lua_pushlstring(state, message.as_ptr().cast(), message.len());
                2
            }
            Answer::Values(message) => match scalar::push(state, &message) {
                Some(count) => {
                    message.discard();
                    count
                }
                // A handle new to this state: the general import makes it.
                None => match context_of(state) {
                    Some(context) => {
                        *context.pending.borrow_mut() = Some(message);
                        take_pending(state)
                    }
                    None => {
                        return Err("internal error in Lutra: a message answered \
                                    outside a process"
                            .into());
                    }
                },
            },
            Answer::Pending => take_pending(state),
        })
    }
}

/// Pushes the values of the message stashed in the context's `pending` (imported by
/// `take_pending`); returns how many.
///
/// # Safety
/// As [`perform`]; nothing Rust owns is alive in the caller.
unsafe fn take_pending(state: *mut lua_State) -> c_int {
    // SAFETY: the running thread; the call may raise, with nothing owned here.
    unsafe {
        let base = ffi::lua_gettop(state);
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(TAKE_PENDING));
        ffi::lua_call(state, 0, ffi::LUA_MULTRET);
        ffi::lua_gettop(state) - base
    }
}

/// Every native closure of a host's state (see `install.rs`): the fallback at once,
/// as every native call does outside a slice (a host thread never runs one).
///
/// # Safety
/// Called by Lua as a native closure of this module.
pub(super) unsafe extern "C-unwind" fn host_fallback(state: *mut lua_State) -> c_int {
    // SAFETY: the running thread; `perform` is the last act.
    unsafe {
        let args = ffi::lua_gettop(state);
        perform(state, Action::Fallback { args }, returned)
    }
}

/// The continuation of a C function's last call made with `lua_callk` (a fallback
/// here, `popen/wait.rs`'s parking read): that call's results are the function's.
pub(crate) unsafe extern "C-unwind" fn returned(
    state: *mut lua_State,
    _status: c_int,
    _ctx: ffi::lua_KContext,
) -> c_int {
    // SAFETY: the running thread.
    unsafe { ffi::lua_gettop(state) }
}
