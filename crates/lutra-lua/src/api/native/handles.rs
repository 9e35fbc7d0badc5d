//! Finding what a native call works on: the calling process's context (and whether
//! it may park natively), and the channel or process behind a handle among its
//! arguments — with the guard that keeps a handle's address out of Lua's reach.
//!
//! # Invariants
//! - A light userdata as the user value of a full userdata is a channel handle's
//!   address (`channel/handle.rs`), or a process handle's with its low bit set
//!   (`process/handle.rs`): Lua code cannot set one, nor change a handle's
//!   (`debug.setuservalue` is guarded, see [`guard_setuservalue`]).
//! - The handle a process's last native call was made on is anchored in its state's
//!   registry (a light-userdata key, emptied before the state is pooled) while its
//!   context notes it by its userdata's address, and the context holds its object:
//!   a userdata at that address is that handle, and the object noted is alive.

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

impl Handle {
    /// The handle whose user value's word is `word` (module invariants).
    #[inline(always)]
    fn of(word: usize) -> Self {
        if word & PROCESS_TAG == 0 {
            Handle::Channel(word as *const Channel)
        } else {
            Handle::Process((word & !PROCESS_TAG) as *const ProcessCore)
        }
    }
}

/// The object of the last handle a native call was made on, kept alive by the
/// process's context (`ProcessContext::last_handle_object`).
pub(crate) enum HandleObject {
    /// A channel's.
    Channel(#[allow(dead_code, reason = "held for its reference only")] Arc<Channel>),
    /// A process's.
    Process(#[allow(dead_code, reason = "held for its reference only")] Arc<ProcessCore>),
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
/// `ch:receive`, `p:send`) by the process of `context`. The handle the process's last
/// such call was made on is known by its userdata's address alone (the context's
/// `last_handle`): a call on it reads no user value. Any other is read as
/// [`handle_at`] reads it, and becomes the last one ([`note_last_handle`]); the user
/// value read is then left on the stack, above the arguments, instead of being
/// popped (a `lua_settop` saved). Every way the call ends copes with it
/// (`perform.rs`): a park and a fallback set the stack themselves, answers and
/// errors are taken from its top.
///
/// # Safety
/// As [`handle_at`]; the caller counted its arguments before (the stack may hold one
/// value more after this call), and pushes at most `LUA_MINSTACK - 2` values without
/// making room; `context` is the running process's, in its own state.
#[inline]
unsafe fn call_handle(
    state: *mut lua_State,
    index: c_int,
    context: &ProcessContext,
) -> Option<Handle> {
    // SAFETY: the caller's contract; a userdata's memory address is that of the
    // anchored userdata noted last only if it is that userdata (the anchor keeps it
    // from being collected, so its memory is not another's: `note_last_handle`). One
    // API call reads the value: `lua_touserdata` answers null for a value that is no
    // userdata, and a light userdata's own pointer, which equals the anchored block's
    // address only if C code made it from that block (Lua code cannot: a handle's
    // user value is its object's address, another allocation); such a value is then
    // taken for the handle, whose object the context keeps alive (module invariants),
    // so the call is sound either way. Any other value is checked in full.
    unsafe {
        let block = ffi::lua_touserdata(state, index) as usize;
        let (last, word) = context.last_handle.get();
        if block == last && block != 0 {
            return Some(Handle::of(word));
        }
        call_handle_new(state, index, context, block)
    }
}

/// [`call_handle`] on a value that is not the last handle: if it is a full userdata
/// (its memory at `block`) with a handle's user value, that is read (left on the
/// stack), and the handle is noted as the last one.
///
/// # Safety
/// As [`call_handle`]; `block` is what `lua_touserdata` answers for the value at
/// `index`.
#[inline(never)]
unsafe fn call_handle_new(
    state: *mut lua_State,
    index: c_int,
    context: &ProcessContext,
    block: usize,
) -> Option<Handle> {
    // SAFETY: the caller's contract.
    unsafe {
        if ffi::lua_type(state, index) != ffi::LUA_TUSERDATA {
            return None;
        }
        let word = user_value_word(state, index)?;
        note_last_handle(state, index, context, block, word);
        Some(Handle::of(word))
    }
}

/// Registry key (by its address) under which a process's state anchors the userdata
/// of the last handle a native call was made on (`ProcessContext::last_handle`).
static LAST_HANDLE: u8 = 0;

/// Notes the handle at `index` (its userdata's memory at `block`, its user value's
/// word `word`) as the last one a native call was made on: the userdata is anchored
/// in the registry (under [`LAST_HANDLE`], put there by [`prepare_last_handle`], so
/// the store allocates nothing), and the context keeps the object itself alive, so
/// the address it notes is always a live object's, whatever happens to the
/// registry. While anchored, the userdata is not collected: its memory is no other
/// userdata's, and it keeps its user value (`debug.setuservalue` is guarded).
///
/// # Safety
/// As [`call_handle_new`]; `word` is the word of the handle at `index` (module
/// invariants).
unsafe fn note_last_handle(
    state: *mut lua_State,
    index: c_int,
    context: &ProcessContext,
    block: usize,
    word: usize,
) {
    // SAFETY: the address in `word` is that of the object whose Arc the handle holds
    // (module invariants), alive while the handle is on the stack: counting one more
    // reference to it is sound. The registry store replaces a value (no allocation).
    unsafe {
        let object = match Handle::of(word) {
            Handle::Channel(address) => {
                Arc::increment_strong_count(address);
                HandleObject::Channel(Arc::from_raw(address))
            }
            Handle::Process(address) => {
                Arc::increment_strong_count(address);
                HandleObject::Process(Arc::from_raw(address))
            }
        };
        ffi::lua_pushvalue(state, index);
        ffi::lua_rawsetp(state, ffi::LUA_REGISTRYINDEX, last_handle_key());
        let old = context.last_handle_object.replace(Some(object));
        context.last_handle.set((block, word));
        drop(old);
    }
}

/// The registry key [`LAST_HANDLE`] as a light userdata's address.
fn last_handle_key() -> *const std::ffi::c_void {
    std::ptr::from_ref(&LAST_HANDLE).cast()
}

/// Puts the anchor of the last handle in a process's state's registry (empty: `false`),
/// so that noting a handle there allocates nothing; also forgets the handle anchored
/// there (a finished process's, before its state is pooled, `process/pool.rs`).
///
/// # Safety
/// `state` is a process's state's thread, with room for one value.
pub(crate) unsafe fn prepare_last_handle(state: *mut lua_State) {
    // SAFETY: the caller's contract; balanced.
    unsafe {
        ffi::lua_pushboolean(state, 0);
        ffi::lua_rawsetp(state, ffi::LUA_REGISTRYINDEX, last_handle_key());
    }
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
        let word = user_value_word(state, index);
        if POP {
            ffi::lua_pop(state, 1);
        }
        word.map(Handle::of)
    }
}

/// The word of the user value of the full userdata at `index` (left on the stack)
/// when that is a light userdata (module invariants).
///
/// # Safety
/// As [`handle_at`]; the value at `index` is a full userdata.
#[inline(always)]
unsafe fn user_value_word(state: *mut lua_State, index: c_int) -> Option<usize> {
    // SAFETY: the caller's contract.
    unsafe {
        let light = ffi::lua_getiuservalue(state, index, 1) == ffi::LUA_TLIGHTUSERDATA;
        let address = ffi::lua_touserdata(state, -1) as usize;
        light.then_some(address)
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
/// borrowed: no reference is counted. The handle is the one the native call of the
/// process of `context` is made on: its user value may be left on the stack
/// ([`call_handle`]).
///
/// # Safety
/// As [`channel_borrowed`].
#[inline]
pub(super) unsafe fn process_borrowed<'a>(
    state: *mut lua_State,
    index: c_int,
    context: &ProcessContext,
) -> Option<&'a ProcessCore> {
    // SAFETY: the caller's contract.
    match unsafe { call_handle(state, index, context) }? {
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
/// the one the native call of the process of `context` is made on: its user value
/// may be left on the stack ([`call_handle`]).
///
/// # Safety
/// As [`channel_at`] and [`call_handle`]; the handle stays at `index` for as long as
/// the result is used, and the result does not outlive the native call (clone it to
/// keep the channel).
#[inline]
pub(super) unsafe fn channel_borrowed(
    state: *mut lua_State,
    index: c_int,
    context: &ProcessContext,
) -> Option<ManuallyDrop<Arc<Channel>>> {
    // SAFETY: as in `channel_at`; the handle's own reference keeps the channel alive
    // while the handle is on the stack, and `ManuallyDrop` never gives back the
    // reference this `Arc` does not own.
    unsafe {
        let Handle::Channel(address) = call_handle(state, index, context)? else {
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
