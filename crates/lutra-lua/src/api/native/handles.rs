//! Finding what a native call works on: the calling process's context (and whether
//! it may park natively), and the channel or process behind a handle among its
//! arguments — with the guard that keeps a handle's address out of Lua's reach.
//!
//! # Invariants
//! - A light userdata as the user value of a full userdata is a channel handle's
//!   address (`channel/handle.rs`), or a process handle's with its low bit set
//!   (`process/handle.rs`): Lua code cannot set one, nor change a handle's
//!   (`debug.setuservalue` is guarded, see [`guard_setuservalue`]).

use crate::channel::Channel;
use crate::process::handle::PROCESS_TAG;
use crate::process::state::{current, named_context};
use crate::process::{ProcessContext, ProcessCore};
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;
use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Waker;

/// The context of the process whose slice runs `state`: named in `state`'s extra
/// space (the process's main coroutine), else the slice's (a coroutine of the
/// process's own, see `process/state.rs`).
///
/// # Safety
/// As [`current`]; `state` is the running thread of a process's state (the natives of
/// a host's state never get here: see `install.rs`).
#[inline(always)]
pub(super) unsafe fn context_of<'a>(state: *mut lua_State) -> Option<&'a ProcessContext> {
    // SAFETY: the caller's contract.
    unsafe { named_context(state).or_else(|| current()) }
}

/// The context of the caller when it may park natively: a process in its slice (not
/// a host thread), outside `lutra.atomic`, in a coroutine that can yield (protocol,
/// step 1).
///
/// # Safety
/// As [`context_of`].
#[inline]
pub(super) unsafe fn parkable<'a>(state: *mut lua_State) -> Option<&'a ProcessContext> {
    // SAFETY: see `context_of`; lua_isyieldable reads the running thread.
    unsafe {
        let context = context_of(state)?;
        let parkable =
            ffi::lua_isyieldable(state) != 0 && !context.no_preempt.load(Ordering::Relaxed);
        parkable.then_some(context)
    }
}

/// The caller's waker, made once per process.
#[inline]
pub(super) fn waker(context: &ProcessContext) -> &Waker {
    context.waker.get_or_init(crate::wakers::current_waker)
}

/// What the handle at stack position `index` (absolute) stands for, if it is one.
pub(super) enum Handle {
    Channel(*const Channel),
    Process(*const ProcessCore),
}

/// The handle at stack position `index` (absolute), if it is one: a full userdata
/// whose user value is a light userdata (module invariants).
///
/// # Safety
/// `state` is the running thread; `index` is a valid position.
#[inline]
pub(super) unsafe fn handle_at(state: *mut lua_State, index: c_int) -> Option<Handle> {
    // SAFETY: the caller's contract; the user value read is popped.
    unsafe { read_handle::<true>(state, index) }
}

/// [`handle_at`] for the handle a native call is made on (argument 1 of `ch:send`,
/// `ch:receive`, `p:send`): the user value it reads is left on the stack, above the
/// arguments, instead of being popped (a `lua_settop` saved per call). Every way the
/// call ends copes with it (`perform.rs`): a park and a fallback set the stack
/// themselves, answers and errors are taken from its top.
///
/// # Safety
/// As [`handle_at`]; the caller counted its arguments before (the stack may hold one
/// value more after this call), and pushes at most `LUA_MINSTACK - 1` values without
/// making room.
#[inline]
unsafe fn call_handle(state: *mut lua_State, index: c_int) -> Option<Handle> {
    // SAFETY: the caller's contract.
    unsafe { read_handle::<false>(state, index) }
}

/// The handle at `index`, its user value popped if `POP`.
///
/// # Safety
/// As [`handle_at`].
#[inline(always)]
unsafe fn read_handle<const POP: bool>(state: *mut lua_State, index: c_int) -> Option<Handle> {
    // SAFETY: reads of the stack, balanced if `POP`.
    unsafe {
        if ffi::lua_type(state, index) != ffi::LUA_TUSERDATA {
            return None;
        }
        let light = ffi::lua_getiuservalue(state, index, 1) == ffi::LUA_TLIGHTUSERDATA;
        let address = ffi::lua_touserdata(state, -1) as usize;
        if POP {
            ffi::lua_pop(state, 1);
        }
        if !light {
            return None;
        }
        Some(if address & PROCESS_TAG == 0 {
            Handle::Channel(address as *const Channel)
        } else {
            Handle::Process((address & !PROCESS_TAG) as *const ProcessCore)
        })
    }
}

/// The address of the channel whose handle is at stack position `index` (absolute),
/// if it is one.
///
/// # Safety
/// As [`handle_at`].
#[inline]
unsafe fn channel_address(state: *mut lua_State, index: c_int) -> Option<*const Channel> {
    // SAFETY: the caller's contract.
    match unsafe { handle_at(state, index) }? {
        Handle::Channel(address) => Some(address),
        Handle::Process(_) => None,
    }
}

/// The process whose handle is at stack position `index` (absolute), if it is one,
/// borrowed: no reference is counted. The handle is the one the native call is made
/// on: its user value may be left on the stack ([`call_handle`]).
///
/// # Safety
/// As [`channel_borrowed`].
#[inline]
pub(super) unsafe fn process_borrowed<'a>(
    state: *mut lua_State,
    index: c_int,
) -> Option<&'a ProcessCore> {
    // SAFETY: the caller's contract.
    match unsafe { call_handle(state, index) }? {
        // SAFETY: the address is that of the process whose Arc the handle holds
        // (module invariants), alive while the handle stays on the stack (the
        // caller's contract).
        Handle::Process(address) => Some(unsafe { &*address }),
        Handle::Channel(_) => None,
    }
}

/// The channel whose handle is at stack position `index` (absolute), if it is one.
///
/// # Safety
/// As [`channel_address`], in a process's state (whose user values are guarded,
/// module invariants): found only after [`parkable`].
pub(super) unsafe fn channel_at(state: *mut lua_State, index: c_int) -> Option<Arc<Channel>> {
    // SAFETY: the address is that of the channel whose Arc the handle holds (module
    // invariants), alive while the handle is on the stack: the clone is sound.
    unsafe {
        let address = channel_address(state, index)?;
        Arc::increment_strong_count(address);
        Some(Arc::from_raw(address))
    }
}

/// The channel whose handle is at stack position `index` (absolute), if it is one,
/// borrowed: no reference is counted, and the `Arc` is never dropped. The handle is
/// the one the native call is made on: its user value may be left on the stack
/// ([`call_handle`]).
///
/// # Safety
/// As [`channel_at`] and [`call_handle`]; the handle stays at `index` for as long as
/// the result is used, and the result does not outlive the native call (clone it to
/// keep the channel).
#[inline]
pub(super) unsafe fn channel_borrowed(
    state: *mut lua_State,
    index: c_int,
) -> Option<ManuallyDrop<Arc<Channel>>> {
    // SAFETY: as in `channel_at`; the handle's own reference keeps the channel alive
    // while the handle is on the stack, and `ManuallyDrop` never gives back the
    // reference this `Arc` does not own.
    unsafe {
        let Handle::Channel(address) = call_handle(state, index)? else {
            return None;
        };
        Some(ManuallyDrop::new(Arc::from_raw(address)))
    }
}

/// `debug.setuservalue(u, value [, n])` that refuses a light userdata as the value
/// and a change of a channel handle's address (module invariants); the stock
/// function (its upvalue) does the rest.
///
/// # Safety
/// Called by Lua as a C closure whose upvalue 1 is the stock `debug.setuservalue`.
pub(super) unsafe extern "C-unwind" fn guard_setuservalue(state: *mut lua_State) -> c_int {
    // SAFETY: reads of the arguments; an argument error longjmps with nothing owned;
    // the stock function is called with the same arguments and its results returned.
    unsafe {
        if ffi::lua_type(state, 2) == ffi::LUA_TLIGHTUSERDATA {
            return ffi::luaL_argerror(
                state,
                2,
                c"a light userdata cannot be a user value".as_ptr(),
            );
        }
        if ffi::luaL_optinteger(state, 3, 1) == 1 {
            let refused = match handle_at(state, 1) {
                Some(Handle::Channel(_)) => c"a channel's user value cannot change",
                Some(Handle::Process(_)) => c"a process's user value cannot change",
                None => c"",
            };
            if !refused.is_empty() {
                return ffi::luaL_argerror(state, 1, refused.as_ptr());
            }
        }
        let args = ffi::lua_gettop(state);
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
        ffi::lua_rotate(state, 1, 1);
        ffi::lua_call(state, args, ffi::LUA_MULTRET);
        ffi::lua_gettop(state)
    }
}
