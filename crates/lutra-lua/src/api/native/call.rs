//! The one native entry and continuation of every message call: a call says how it
//! starts and how it goes on ([`MessageCall`]); [`entry`] and its continuation do
//! the rest (protocol steps 1–3 of the module).
//!
//! # Protocol
//! 1. [`entry`] tries the native path when the arguments allow it
//!    ([`MessageCall::accepts`]) and the caller may park natively (`parkable`):
//!    [`MessageCall::start`] then decides; otherwise, or when `start` declines
//!    (before any side effect), the call is its fallback's.
//! 2. Resumed after a park, the continuation takes back the channel the call parked
//!    on (the context's `parked`); resumed with `CANNOT` or `CANCEL`, it performs
//!    [`MessageCall::interrupted`], else [`MessageCall::resume`] (another attempt,
//!    which may park again with the same continuation).

use super::CANNOT;
use super::handles::{context_of, parkable};
use super::perform::{Action, perform};
use super::wait::cannot_wait;
use crate::channel::Channel;
use crate::process::ProcessContext;
use crate::process::state::PARKED_IN_PLACE;
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;
use std::sync::Arc;

/// A blocking message call made native: its first attempt, and what it does once
/// resumed after waiting.
pub(super) trait MessageCall {
    /// The call as Lua code writes it (`ch:send`), for an internal error.
    const NAME: &'static str;

    /// Whether the `args` arguments may take the native path at all (read before
    /// the caller's context is looked up); by default, yes.
    ///
    /// # Safety
    /// As [`start`](Self::start).
    #[inline(always)]
    unsafe fn accepts(_state: *mut lua_State, _args: c_int) -> bool {
        true
    }

    /// The first attempt, on the call's `args` arguments, for the caller `context`
    /// (which may park natively); `None`, having done nothing, when the fallback
    /// must answer instead.
    ///
    /// # Safety
    /// `state` runs the call's native closure (its upvalues as the module says).
    unsafe fn start(state: *mut lua_State, args: c_int, context: &ProcessContext)
    -> Option<Action>;

    /// Another attempt once the process was woken: it waited on `channel`, and
    /// parked with `ctx` (a send's sequence).
    fn resume(context: &ProcessContext, channel: &Arc<Channel>, ctx: ffi::lua_KContext) -> Action;

    /// The wait ended without the process being woken (resumed with `CANNOT` or
    /// `CANCEL`): by default the wait's error ([`cannot_wait`]); a send takes its
    /// message back first.
    #[cold]
    fn interrupted(
        context: &ProcessContext,
        _channel: &Arc<Channel>,
        _ctx: ffi::lua_KContext,
    ) -> Action {
        cannot_wait(context)
    }
}

/// The native closure of call `C`.
///
/// # Safety
/// Called by Lua as a native closure of this module.
pub(super) unsafe extern "C-unwind" fn entry<C: MessageCall>(state: *mut lua_State) -> c_int {
    // SAFETY: the running thread; `perform` is the last act.
    unsafe {
        let args = ffi::lua_gettop(state);
        // Two calls of `perform` rather than one on `unwrap_or_else`'s result: the
        // action is not moved once more, and the second call keeps only its fallback.
        match first_attempt::<C>(state, args) {
            Some(action) => perform(state, action, continued::<C>),
            None => perform(state, Action::Fallback { args }, continued::<C>),
        }
    }
}

/// Call `C`'s first attempt on its `args` arguments, or `None` for its fallback
/// (protocol, step 1).
///
/// # Safety
/// As [`MessageCall::start`].
#[inline(always)]
unsafe fn first_attempt<C: MessageCall>(state: *mut lua_State, args: c_int) -> Option<Action> {
    // SAFETY: the caller's contract.
    unsafe {
        if !C::accepts(state, args) {
            return None;
        }
        let context = parkable(state)?;
        C::start(state, args, context)
    }
}

/// Call `C` resumed after waiting.
unsafe extern "C-unwind" fn continued<C: MessageCall>(
    state: *mut lua_State,
    _status: c_int,
    ctx: ffi::lua_KContext,
) -> c_int {
    // SAFETY: the running thread; `perform` is the last act.
    unsafe {
        let action = match resumed(state) {
            Some((context, channel, true)) => C::interrupted(context, &channel, ctx),
            Some((context, channel, false)) => C::resume(context, &channel, ctx),
            None => lost(C::NAME),
        };
        perform(state, action, continued::<C>)
    }
}

/// The context and channel of the native call resumed on `state` (its wait is the
/// context's `native_wait`), and whether it was resumed with `CANNOT` or `CANCEL`;
/// `None` if nothing was parked (never: see `ProcessContext::parked`).
///
/// # Safety
/// `state` runs the continuation of a native closure of this module.
#[inline]
unsafe fn resumed<'a>(state: *mut lua_State) -> Option<(&'a ProcessContext, Arc<Channel>, bool)> {
    // SAFETY: see `context_of`; reads of the stack (the resume values alone, see
    // `perform`) and of upvalue 2.
    unsafe {
        let context = context_of(state)?;
        let channel = context.parked.take()?;
        let top = context.park_top.get();
        let cannot = if top == PARKED_IN_PLACE {
            // The main coroutine's frame as the park left it: resumed with no value
            // but `CANCEL`, pushed on its top (`resume.rs`'s invariants).
            context.resuming_with_cancel.get() && interrupted(state, ffi::lua_gettop(state))
        } else {
            // A value resumed with sits above the frame as the park left it.
            ffi::lua_gettop(state) > top && interrupted(state, top + 1)
        };
        Some((context, channel, cannot))
    }
}

/// Whether the native call resumed on `state` with values (the first at stack
/// position `first`) was resumed with `CANNOT`, or with `CANCEL` (a cancelled
/// process, `process/cancel.rs`): either way it stops waiting.
///
/// # Safety
/// As [`resumed`]; the stack holds a value at `first`.
#[cold]
unsafe fn interrupted(state: *mut lua_State, first: c_int) -> bool {
    // SAFETY: reads of stack position `first` and of upvalue 2.
    unsafe {
        ffi::lua_rawequal(state, first, ffi::lua_upvalueindex(CANNOT)) != 0
            || ffi::lua_touserdata(state, first) == crate::process::cancel::CANCEL
    }
}

/// The error of a continuation that found nothing parked (a bug in Lutra).
#[cold]
fn lost(what: &str) -> Action {
    Action::Raise(format!(
        "internal error in Lutra: {what} resumed with no wait noted"
    ))
}
