//! Native fast paths of the blocking message calls — `ch:send`, `ch:receive`,
//! `luaproc.send`, `luaproc.receive`, `p:send`, `lutra.receive` — as
//! `lua_CFunction`s standing in front of the Lua functions of `prelude.lua` and
//! `luaproc.lua`, so that a message costs no mlua conversion, no Lua loop and no
//! label built per call.
//!
//! # Protocol
//! 1. A native call handles the common case itself: a process in its slice (not a
//!    host thread) whose coroutine can yield, outside `lutra.atomic`, a live channel
//!    or process, values that are scalars or handles (`scalar.rs`). In any other case, before any side effect, it calls the
//!    Lua function it stands in front of (its *fallback*) with the same arguments and
//!    answers what that answers (errors included).
//! 2. To wait, it registers its waker and notes what it waits on as the Lua loop does
//!    (`channel/core.rs`'s protocol), then yields [`PARK`] with `lua_yieldk`: the
//!    yield travels up as the Lua loop's yield does (the prelude's relay, the task),
//!    and the continuation polls again once the process is resumed. Resumed with
//!    `CANNOT` (a coroutine resumed from a C function that cannot yield), the call
//!    stops waiting and raises the Lua loop's error.
//! 3. Errors are raised at the caller's position (`luaL_where(L, 1)`), with the Lua
//!    loop's wording; answers have the Lua functions' shapes.
//!
//! # Invariants
//! - Nothing Rust owns is alive when a native function leaves by `lua_error` or
//!   `lua_yieldk` (both longjmp): each step decides in safe code what to do (an
//!   [`Action`]) and [`perform`] does it with plain values only.
//! - Upvalues of every native closure: 1 the fallback, 2 `CANNOT`, 3
//!   `raw.take_pending`, 4 (luaproc) the named-channel cache.
//! - A native call finds its process's context in the extra space of the running
//!   thread, else in the slice's thread-local (`process/state.rs`). Only a process's
//!   state has its threads' extra space defined: in a host's state every native
//!   closure is [`host_fallback`], which calls the fallback at once (as the others
//!   do outside a slice, where a host's code always runs).
//! - A light userdata as the user value of a full userdata is a channel handle's
//!   address (`channel/handle.rs`), or a process handle's with its low bit set
//!   (`process/handle.rs`): Lua code cannot set one, nor change a handle's
//!   (`debug.setuservalue` is guarded, see [`guard_setuservalue`]).
//! - A native call keeps nothing on its stack across a wait (mlua's `Thread::resume`
//!   empties it when the main coroutine yielded): what the continuation needs is in
//!   the context's `parked` (the channel, kept alive there), its `native_wait` (the
//!   wait, noted by the park) and the continuation's `ctx` (a send's sequence). A
//!   process parks in at most one native call at a time; its continuation takes
//!   `parked` back (`native_wait` stays, for the next park on the same channel).

mod channel;
mod luaproc;
mod mailbox;
mod scalar;

use crate::api::PARK;
use crate::channel::{Channel, ReceivePoll};
use crate::process::ProcessContext;
use crate::process::ProcessCore;
use crate::process::handle::PROCESS_TAG;
use crate::process::state::NativeWait;
use crate::process::state::{current, named_context};
use crate::transfer::Message;
use mlua::ffi::{self, lua_State};
use mlua::{Function, Lua, MultiValue, Table};
use std::ffi::c_int;
use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Waker;

/// Upvalue positions (module invariants).
const FALLBACK: c_int = 1;
const CANNOT: c_int = 2;
const TAKE_PENDING: c_int = 3;
const NAMED: c_int = 4;

/// What a native call does next.
enum Action {
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
enum Answer {
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
unsafe fn perform(state: *mut lua_State, action: Action, k: ffi::lua_KFunction) -> c_int {
    // SAFETY: stack operations on the running thread; every Rust value is moved out
    // (or dropped) before a call that may longjmp (module invariants).
    unsafe {
        match action {
            Action::Return(answer) => match answer_with(state, answer) {
                Ok(count) => count,
                Err(message) => raise(state, message),
            },
            Action::Park { ctx } => {
                // Nothing stays on the stack: mlua's `Thread::resume` empties the
                // frame of a C function that yielded the main coroutine.
                ffi::lua_settop(state, 0);
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
                Some(count) => count,
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

/// Every native closure of a host's state (see [`install`]): the fallback at once,
/// as every native call does outside a slice (a host thread never runs one).
///
/// # Safety
/// Called by Lua as a native closure of this module.
unsafe extern "C-unwind" fn host_fallback(state: *mut lua_State) -> c_int {
    // SAFETY: the running thread; `perform` is the last act.
    unsafe {
        let args = ffi::lua_gettop(state);
        perform(state, Action::Fallback { args }, returned)
    }
}

/// The continuation of a fallback: its results are the call's.
unsafe extern "C-unwind" fn returned(
    state: *mut lua_State,
    _status: c_int,
    _ctx: ffi::lua_KContext,
) -> c_int {
    // SAFETY: the running thread.
    unsafe { ffi::lua_gettop(state) }
}

/// The context of the process whose slice runs `state`: named in `state`'s extra
/// space (the process's main coroutine), else the slice's (a coroutine of the
/// process's own, see `process/state.rs`).
///
/// # Safety
/// As [`current`]; `state` is the running thread of a process's state (the natives of
/// a host's state never get here: see [`install`]).
#[inline(always)]
unsafe fn context_of<'a>(state: *mut lua_State) -> Option<&'a ProcessContext> {
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
unsafe fn parkable<'a>(state: *mut lua_State) -> Option<&'a ProcessContext> {
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
fn waker(context: &ProcessContext) -> &Waker {
    context.waker.get_or_init(crate::wakers::current_waker)
}

/// What the handle at stack position `index` (absolute) stands for, if it is one.
enum Handle {
    Channel(*const Channel),
    Process(*const ProcessCore),
}

/// The handle at stack position `index` (absolute), if it is one: a full userdata
/// whose user value is a light userdata (module invariants).
///
/// # Safety
/// `state` is the running thread; `index` is a valid position.
#[inline]
unsafe fn handle_at(state: *mut lua_State, index: c_int) -> Option<Handle> {
    // SAFETY: reads of the stack, balanced.
    unsafe {
        if ffi::lua_type(state, index) != ffi::LUA_TUSERDATA {
            return None;
        }
        let light = ffi::lua_getiuservalue(state, index, 1) == ffi::LUA_TLIGHTUSERDATA;
        let address = ffi::lua_touserdata(state, -1) as usize;
        ffi::lua_pop(state, 1);
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
/// borrowed: no reference is counted.
///
/// # Safety
/// As [`channel_borrowed`].
#[inline]
unsafe fn process_borrowed<'a>(state: *mut lua_State, index: c_int) -> Option<&'a ProcessCore> {
    // SAFETY: the caller's contract.
    match unsafe { handle_at(state, index) }? {
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
unsafe fn channel_at(state: *mut lua_State, index: c_int) -> Option<Arc<Channel>> {
    // SAFETY: the address is that of the channel whose Arc the handle holds (module
    // invariants), alive while the handle is on the stack: the clone is sound.
    unsafe {
        let address = channel_address(state, index)?;
        Arc::increment_strong_count(address);
        Some(Arc::from_raw(address))
    }
}

/// The channel whose handle is at stack position `index` (absolute), if it is one,
/// borrowed: no reference is counted, and the `Arc` is never dropped.
///
/// # Safety
/// As [`channel_at`]; the handle stays at `index` for as long as the result is used,
/// and the result does not outlive the native call (clone it to keep the channel).
#[inline]
unsafe fn channel_borrowed(
    state: *mut lua_State,
    index: c_int,
) -> Option<ManuallyDrop<Arc<Channel>>> {
    // SAFETY: as in `channel_at`; the handle's own reference keeps the channel alive
    // while the handle is on the stack, and `ManuallyDrop` never gives back the
    // reference this `Arc` does not own.
    unsafe {
        let address = channel_address(state, index)?;
        Some(ManuallyDrop::new(Arc::from_raw(address)))
    }
}

/// `debug.setuservalue(u, value [, n])` that refuses a light userdata as the value
/// and a change of a channel handle's address (module invariants); the stock
/// function (its upvalue) does the rest.
///
/// # Safety
/// Called by Lua as a C closure whose upvalue 1 is the stock `debug.setuservalue`.
unsafe extern "C-unwind" fn guard_setuservalue(state: *mut lua_State) -> c_int {
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

/// Parks the caller on `channel` (`what` says how; `name` is its luaproc name, if
/// any): notes the wait, with its label built by `label` only when the last wait was
/// not the same, and keeps the channel in the context for the continuation.
fn park(
    context: &ProcessContext,
    what: &'static str,
    channel: &Arc<Channel>,
    name: impl FnOnce() -> Option<Arc<str>>,
    label: impl FnOnce(Option<&str>) -> String,
    ctx: ffi::lua_KContext,
) -> Action {
    {
        let mut last = context.native_wait.borrow_mut();
        let wait = match &mut *last {
            Some(wait) if wait.channel_id == channel.id() && same(wait.what, what) => wait,
            last => {
                let name = name();
                last.insert(NativeWait {
                    what,
                    channel_id: channel.id(),
                    label: label(name.as_deref()).into(),
                    name,
                })
            }
        };
        context.process.note_waiting_on(&wait.label);
    }
    *context.parked.borrow_mut() = Some(channel.clone());
    Action::Park { ctx }
}

/// Starts sending the message of scalars at stack positions `2..=args` on `channel`
/// for the caller: `Some(None)` once sent (queued, or handed to a receiver),
/// `Some(Some(sequence))` when the caller must wait (its waker registered), `None`,
/// having done nothing, when the values are not all scalars or handles, or the
/// channel is closed (the fallback then answers).
///
/// # Safety
/// As [`scalar::export`]; `state` is a process's running thread.
unsafe fn begin_send(
    state: *mut lua_State,
    args: c_int,
    context: &ProcessContext,
    channel: &Channel,
) -> Option<Option<u64>> {
    // SAFETY: the caller's contract.
    let message = unsafe { scalar::export(state, 2, args) }?;
    let started = channel.begin_send(message, waker(context)).ok()?;
    context.runtime.counters.note_sent(context.process.id());
    Some((!started.sent).then_some(started.sequence))
}

/// Whether two waits' kinds are the same: by address first (each is a literal of one
/// call site), by content otherwise.
fn same(a: &'static str, b: &'static str) -> bool {
    std::ptr::eq(a, b) || a == b
}

/// One receive attempt on `channel`: the message taken, or the caller parked (as by
/// [`park`], noted as receiving, registered to take a message handed to it: the
/// call ends only by taking one or by leaving); `None` when the channel is closed
/// and drained.
#[inline]
fn receive_or_park(
    context: &ProcessContext,
    channel: &Arc<Channel>,
    what: &'static str,
    name: impl FnOnce() -> Option<Arc<str>>,
    label: impl FnOnce(Option<&str>) -> String,
) -> Option<Action> {
    Some(
        match channel.poll_receive_direct(context.process.id(), waker(context)) {
            ReceivePoll::Message(message) => took(context, channel, message),
            ReceivePoll::Closed => return None,
            ReceivePoll::Empty => {
                context.process.note_receiving(channel);
                park(context, what, channel, name, label, 0)
            }
        },
    )
}

/// The context and channel of the native call resumed on `state` (its wait is the
/// context's `native_wait`), and whether it was resumed with `CANNOT`; `None` if
/// nothing was parked (never: see `ProcessContext::parked`).
///
/// # Safety
/// `state` runs the continuation of a native closure of this module.
#[inline]
unsafe fn resumed<'a>(state: *mut lua_State) -> Option<(&'a ProcessContext, Arc<Channel>, bool)> {
    // SAFETY: see `context_of`; reads of the stack (the resume values alone, see
    // `perform`) and of upvalue 2.
    unsafe {
        let context = context_of(state)?;
        let channel = context.parked.borrow_mut().take()?;
        let cannot = ffi::lua_gettop(state) >= 1 && interrupted(state);
        Some((context, channel, cannot))
    }
}

/// Whether the native call resumed on `state` with values was resumed with `CANNOT`,
/// or with `CANCEL` (a cancelled process, `process/cancel.rs`): either way it stops
/// waiting.
///
/// # Safety
/// As [`resumed`]; the stack holds at least one value.
#[cold]
unsafe fn interrupted(state: *mut lua_State) -> bool {
    // SAFETY: reads of stack position 1 and of upvalue 2.
    unsafe {
        ffi::lua_rawequal(state, 1, ffi::lua_upvalueindex(CANNOT)) != 0
            || ffi::lua_touserdata(state, 1) == crate::process::cancel::CANCEL
    }
}

/// The luaproc name of the channel the process parked on (its `native_wait`'s), or
/// an empty name.
fn parked_name(context: &ProcessContext) -> Arc<str> {
    match &*context.native_wait.borrow() {
        Some(NativeWait {
            name: Some(name), ..
        }) => name.clone(),
        _ => "".into(),
    }
}

/// The error of a continuation that found nothing parked (a bug in Lutra).
fn lost(what: &str) -> Action {
    Action::Raise(format!(
        "internal error in Lutra: {what} resumed with no wait noted"
    ))
}

/// The error of a wait resumed with `CANNOT` (the Lua loop's `park`), or with
/// `CANCEL` (the cancellation's error, `process/cancel.rs`): the process no longer
/// waits, and leaves the channels it registered on.
fn cannot_wait(context: &ProcessContext) -> Action {
    let label = match &*context.native_wait.borrow() {
        Some(wait) => wait.label.clone(),
        None => "a channel".into(),
    };
    context.process.set_waiting_on(None);
    context.process.leave_channels();
    if let Some(message) = crate::process::cancel::pending_message(context) {
        return Action::Raise(message.to_string());
    }
    Action::Raise(format!(
        "cannot block on {label} here: this coroutine was resumed from a C function that \
         cannot yield, so the scheduler cannot be reached"
    ))
}

/// [`cannot_wait`] for a send of message `sequence` on `channel`: the message is
/// taken back (a send that fails delivers nothing), unless the send completed after
/// all, which then answers `sent`.
#[cold]
fn cannot_send(
    context: &ProcessContext,
    channel: &Channel,
    sequence: ffi::lua_KContext,
    sent: Answer,
) -> Action {
    if channel.withdraw(sequence as u64) {
        context.process.set_waiting_on(None);
        return Action::Return(sent);
    }
    cannot_wait(context)
}

/// A receive took `message` from `channel` (giving up its registration there): the
/// process leaves the other channels it waited on, and the message is answered (its
/// values pushed, or imported by `take_pending`).
#[inline]
fn took(context: &ProcessContext, channel: &Channel, message: Message) -> Action {
    context.process.took_from(channel);
    context.runtime.counters.note_received(context.process.id());
    if scalar::fits(&message) {
        return Action::Return(Answer::Values(message));
    }
    *context.pending.borrow_mut() = Some(message);
    Action::Return(Answer::Pending)
}

/// A native closure of `function` with the module's upvalues.
fn closure(
    lua: &Lua,
    function: ffi::lua_CFunction,
    upvalues: MultiValue,
) -> mlua::Result<Function> {
    let count = upvalues.len() as c_int;
    // SAFETY: mlua pushes the upvalues onto a protected call's stack; the closure
    // takes them.
    unsafe {
        lua.exec_raw(upvalues, |state| {
            ffi::lua_pushcclosure(state, function, count);
        })
    }
}

/// Registry key of the table of what every native closure shares: `cannot`,
/// `take_pending` and `named` (the cache of named channels).
const SHARED_KEY: &str = "lutra.native";

/// A native closure of `function` in front of `fallback` (of [`host_fallback`] in a
/// host's state, `host`), its upvalues taken from `shared` (the table under
/// [`SHARED_KEY`]); with the named-channel cache when `named`.
fn native(
    lua: &Lua,
    shared: &Table,
    function: ffi::lua_CFunction,
    fallback: Function,
    named: bool,
    host: bool,
) -> mlua::Result<Function> {
    let function = if host { host_fallback } else { function };
    let mut upvalues = MultiValue::new();
    upvalues.push_back(mlua::Value::Function(fallback));
    upvalues.push_back(shared.get("cannot")?);
    upvalues.push_back(shared.get("take_pending")?);
    if named {
        upvalues.push_back(shared.get("named")?);
    }
    closure(lua, function, upvalues)
}

/// Puts the native `send` and `receive` in front of the channel methods `methods`,
/// the native `send` in front of the process methods `process_methods` and the
/// native `receive` in front of `lutra.receive`, and gives `raw` what `luaproc.lua`
/// needs for its own: `raw.lp_named`, the cache of named channels (name → handle,
/// weak values), and `raw.lp_native(kind, fallback)`; `internal` is the prelude's
/// (its `cannot`). In a host's state (`host`) every native closure is
/// [`host_fallback`]: the natives find the caller's context in the extra space of the
/// running thread, which a host's threads leave undefined (`process/state.rs`).
pub(crate) fn install(
    lua: &Lua,
    raw: &Table,
    methods: &Table,
    process_methods: &Table,
    lutra: &Table,
    internal: &Table,
    host: bool,
) -> mlua::Result<()> {
    if !host {
        let debug: Table = lua.globals().get("debug")?;
        let stock: mlua::Value = debug.get("setuservalue")?;
        let mut upvalues = MultiValue::new();
        upvalues.push_back(stock);
        debug.set("setuservalue", closure(lua, guard_setuservalue, upvalues)?)?;
    }
    let named = lua.create_table()?;
    let weak_values = lua.create_table()?;
    weak_values.set("__mode", "v")?;
    named.set_metatable(Some(weak_values))?;
    let shared = lua.create_table()?;
    shared.set("cannot", internal.get::<mlua::Value>("cannot")?)?;
    shared.set("named", &named)?;
    shared.set(
        "take_pending",
        lua.create_function(|lua, ()| {
            let message = ProcessContext::of(lua)?.pending.borrow_mut().take();
            match message {
                Some(message) => crate::transfer::import(lua, &message),
                None => Ok(MultiValue::new()),
            }
        })?,
    )?;
    lua.set_named_registry_value(SHARED_KEY, &shared)?;
    let in_front = |table: &Table, name: &str, function: ffi::lua_CFunction| {
        table.set(
            name,
            native(lua, &shared, function, table.get(name)?, false, host)?,
        )
    };
    in_front(methods, "send", channel::send)?;
    in_front(methods, "receive", channel::receive)?;
    in_front(process_methods, "send", mailbox::send)?;
    in_front(lutra, "receive", mailbox::receive)?;
    raw.set("lp_named", named)?;
    raw.set(
        "lp_native",
        lua.create_function(move |lua, (kind, fallback): (String, Function)| {
            let function: ffi::lua_CFunction = match kind.as_str() {
                "send" => luaproc::send,
                "receive" => luaproc::receive,
                _ => return Err(mlua::Error::runtime("lp_native: send or receive expected")),
            };
            native(
                lua,
                &lua.named_registry_value(SHARED_KEY)?,
                function,
                fallback,
                true,
                host,
            )
        })?,
    )?;
    Ok(())
}
