//! The program's own debug hook (`debug.sethook`) while the preemption hook stands in
//! for it (`preempt.rs`): kept in the process's context when the preemption hook is
//! set on a thread, its line, call and return events handed on meanwhile, and put
//! back, with its mask and count, when the preemption hook clears itself.
//!
//! # Invariants
//! - `ProcessContext::user_hook` holds the hook the program had on one thread of the
//!   process (or nothing) from the moment the preemption hook replaced it to the
//!   moment it is put back. It is kept in the context, not per worker: a process
//!   preempted on one worker may resume on another.
//! - Everything here runs on the worker running the process: in the preemption
//!   signal's handler (plain loads and stores only) or in the hook itself.

use crate::process::ProcessContext;
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;
use std::ptr::null_mut;

/// The program's own hook on one Lua thread (module invariants).
#[derive(Clone, Copy)]
pub(crate) struct UserHook {
    thread: *mut lua_State,
    hook: Option<ffi::lua_Hook>,
    mask: c_int,
    count: c_int,
}

// SAFETY: the thread is only compared with the running thread by the worker running
// the process (the context moves with its state, and is used by one worker at a time).
unsafe impl Send for UserHook {}

impl UserHook {
    /// Nothing kept.
    pub(crate) const NONE: Self = Self {
        thread: null_mut(),
        hook: None,
        mask: 0,
        count: 0,
    };
}

/// Keeps the hook set on `thread` (when `replacing`: the preemption hook is not the
/// one set) and answers the events the preemption hook must hand on to it (its mask
/// without the count).
///
/// # Safety
/// `thread` is a live Lua thread of the process whose context is `context` (or
/// null); async-signal-safe (plain loads and stores).
pub(super) unsafe fn keep(
    thread: *mut lua_State,
    context: *const ProcessContext,
    replacing: bool,
) -> c_int {
    // SAFETY: the caller's contract; the hook fields are plain loads.
    unsafe {
        let Some(context) = context.as_ref() else {
            return 0;
        };
        if replacing {
            context.user_hook.set(UserHook {
                thread,
                hook: ffi::lua_gethook(thread),
                mask: ffi::lua_gethookmask(thread),
                count: ffi::lua_gethookcount(thread),
            });
        }
        let saved = context.user_hook.get();
        if saved.thread == thread && saved.hook.is_some() {
            saved.mask & !ffi::LUA_MASKCOUNT
        } else {
            0
        }
    }
}

/// Puts back on `state` the program's hook kept for it, or clears the hook.
///
/// # Safety
/// `state` is the running thread; `context` its process's context or null.
pub(super) unsafe fn put_back(state: *mut lua_State, context: *const ProcessContext) {
    // SAFETY: the caller's contract.
    unsafe {
        if let Some(context) = context.as_ref() {
            let saved = context.user_hook.get();
            if saved.thread == state {
                context.user_hook.set(UserHook::NONE);
                ffi::lua_sethook(state, saved.hook, saved.mask, saved.count);
                return;
            }
        }
        ffi::lua_sethook(state, None, 0, 0);
    }
}

/// Hands an event other than the preemption's count to the program's own hook on
/// `state`, if it has one.
///
/// # Safety
/// Called from the preemption hook with its arguments, the thread able to call.
pub(super) unsafe fn forward(
    state: *mut lua_State,
    debug: *mut ffi::lua_Debug,
    context: *const ProcessContext,
) {
    // SAFETY: the caller's contract; the saved hook was the program's on `state`.
    unsafe {
        if let Some(context) = context.as_ref() {
            let saved = context.user_hook.get();
            if saved.thread == state
                && let Some(hook) = saved.hook
            {
                hook(state, debug);
            }
        }
    }
}
