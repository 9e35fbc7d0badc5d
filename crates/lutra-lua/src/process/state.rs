//! A process's Lua state: the standard libraries, the `lutra` library, the
//! process's context (runtime, own record, preemption marks) and memory limit.
//!
//! The native calls (`api/native`) find the context of the process that runs them in
//! the extra space of the Lua thread they run on (`lua_getextraspace`: a pointer's
//! worth of bytes before each thread, which Lua leaves to the program) when the
//! slice named it there, and through the thread-local of the slice (`current`)
//! otherwise: in a shared library every thread-local lookup is a call to
//! `__tls_get_addr`.
//!
//! # Invariants
//! - In a process's state, the extra space of every Lua thread that runs Lua code
//!   holds null, or the context of the process whose slice is running that thread on
//!   the calling OS thread. [`fresh_state`] nulls the main thread's before anything
//!   runs in the state (Lua copies the main thread's into every thread it creates
//!   after that; the one made before, mlua's reference stack, never runs code); a
//!   slice names the context in the main coroutine's and nulls it when it ends
//!   (`Slice`, `preempt.rs`). The threads of a host's state (the stock `lua` program
//!   that loaded the module) hold whatever their allocation held: no native call of a
//!   host reads them (`api/native`'s `install`).

use crate::process::ProcessCore;
use crate::runtime::RuntimeShared;
use mlua::{Lua, LuaOptions, StdLib, ffi};
use std::cell::{Cell, OnceCell, RefCell};
use std::ffi::c_int;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Registry key of the original `debug.getupvalue` (user code may replace the global).
pub(crate) const GETUPVALUE_KEY: &str = "lutra.getupvalue";

/// `ProcessContext::park_top` of a native call parked on the slice's main coroutine
/// with its frame left as it is: no top was read; a value it is resumed with can
/// only be `CANCEL`, on the stack's top (`resume.rs`'s invariants).
pub(crate) const PARKED_IN_PLACE: std::ffi::c_int = -1;

/// What a Lua state knows about the process it belongs to (its app data).
pub(crate) struct ProcessContext {
    pub(crate) runtime: Arc<RuntimeShared>,
    pub(crate) process: Arc<ProcessCore>,
    /// Set by the preemption hook (`preempt.rs`) and `raw.request_yield` just before
    /// the thread yields; consumed by the C call that resumed the thread (the native
    /// `coroutine.resume`, or the task for the main coroutine) before any Lua code
    /// runs on the worker again.
    pub(crate) preempted: AtomicBool,
    /// Set while preemption must not happen (inside `atomic`).
    pub(crate) no_preempt: AtomicBool,
    /// Set by a native blocking call that parks the slice's main coroutine, right
    /// before it yields (with no values: the mark stands for `PARK`); consumed by
    /// the resumer at every yield (`resume.rs`).
    pub(crate) native_park: Cell<bool>,
    /// The stack's top (in the parked call's frame) when a native call parked: a
    /// value its continuation was resumed with (`CANNOT`, `CANCEL`) sits above it;
    /// or [`PARKED_IN_PLACE`]. A park on the slice's main coroutine leaves its frame
    /// as it is (no call to empty it, and its top is not read) and notes
    /// `PARKED_IN_PLACE`, unless mlua's first resume empties it (the task then sets
    /// 0, `task.rs`); a park elsewhere empties it and notes 0
    /// (`api/native/perform.rs`).
    pub(crate) park_top: Cell<c_int>,
    /// Set only while the task resumes the slice's main coroutine with `CANCEL`
    /// (`resume.rs`, `resume_cancelled`): the one resume of that coroutine that
    /// passes a value, on its top. A continuation parked in place
    /// ([`PARKED_IN_PLACE`]) looks for a value only then.
    pub(crate) resuming_with_cancel: Cell<bool>,
    /// The program's own hook that the preemption hook stands in for (`preempt.rs`).
    pub(crate) user_hook: Cell<super::user_hook::UserHook>,
    /// What the process last waited on, with its text (see `api::host::note_wait`).
    pub(crate) last_wait: RefCell<Option<LastWait>>,
    /// The label of the last wait of a native blocking call (`api/native`), by what
    /// it was and the channel's id: built once per run of waits on one channel.
    pub(crate) native_wait: RefCell<Option<NativeWait>>,
    /// The channel of the native blocking call the process is parked in, if any (at
    /// most one: the whole process parks, and is resumed down to that call first);
    /// its wait is `native_wait`.
    pub(crate) parked: Cell<Option<Arc<crate::channel::Channel>>>,
    /// A message a native receive took whose values are not all scalars: imported by
    /// `raw.take_pending`, which the native call runs next.
    pub(crate) pending: RefCell<Option<crate::transfer::Message>>,
    /// The process's waker (`wakers::current_waker`), made at its first wait.
    pub(crate) waker: OnceCell<std::task::Waker>,
    /// The luaproc channel a native call found by name last, with its name
    /// (`api/native/luaproc.rs`).
    pub(crate) last_named: RefCell<Option<NamedChannel>>,
    /// The handle the last native message call on a handle was made on
    /// (`api/native/handles.rs`): its userdata's memory address (0: none yet) and its
    /// user value's word. The userdata is anchored in the state's registry while it
    /// is noted here.
    pub(crate) last_handle: Cell<(usize, usize)>,
    /// The object of `last_handle`, kept alive while it is noted.
    pub(crate) last_handle_object: RefCell<Option<crate::api::native::HandleObject>>,
}

/// A luaproc channel with its name.
pub(crate) type NamedChannel = (Box<[u8]>, Arc<crate::channel::Channel>);

/// What a native blocking call waits on: how (`what`), the channel's id, its luaproc
/// name if it has one, and the label deadlock reports show.
#[derive(Clone)]
pub(crate) struct NativeWait {
    pub(crate) what: &'static str,
    pub(crate) channel_id: u64,
    pub(crate) name: Option<Arc<str>>,
    pub(crate) label: Arc<str>,
}

/// A wait's `what` and `object` (kept alive here, so that they compare by identity)
/// and the label built from them.
pub(crate) struct LastWait {
    pub(crate) what: mlua::LuaString,
    pub(crate) object: mlua::Value,
    pub(crate) text: Arc<str>,
}

impl ProcessContext {
    /// The context of `process` in `runtime`, not preempted, waiting on nothing.
    pub(crate) fn new(runtime: Arc<RuntimeShared>, process: Arc<ProcessCore>) -> Self {
        Self {
            runtime,
            process,
            preempted: AtomicBool::new(false),
            no_preempt: AtomicBool::new(false),
            native_park: Cell::new(false),
            park_top: Cell::new(0),
            resuming_with_cancel: Cell::new(false),
            user_hook: Cell::new(super::user_hook::UserHook::NONE),
            last_wait: RefCell::new(None),
            native_wait: RefCell::new(None),
            parked: Cell::new(None),
            pending: RefCell::new(None),
            waker: OnceCell::new(),
            last_named: RefCell::new(None),
            last_handle: Cell::new((0, 0)),
            last_handle_object: RefCell::new(None),
        }
    }

    /// The context of `lua`.
    ///
    /// # Errors
    /// When `lua` is not a Lutra state (a misuse of the raw functions).
    pub(crate) fn of(lua: &Lua) -> mlua::Result<mlua::AppDataRef<'_, ProcessContext>> {
        lua.app_data_ref::<ProcessContext>()
            .ok_or_else(|| mlua::Error::runtime("this Lua state is not a Lutra process"))
    }
}

/// A Lua state for `process`, with `lutra` installed: a recycled one if the pool has
/// one (see `pool.rs`), else a new one.
pub(crate) fn new_state(
    runtime: &Arc<RuntimeShared>,
    process: &Arc<ProcessCore>,
) -> mlua::Result<Lua> {
    let lua = match runtime.states.take() {
        Some(lua) => {
            bind(&lua, runtime, process);
            lua
        }
        None => fresh_state(runtime, process)?,
    };
    if let Some(limit) = runtime.options.memory_limit {
        lua.set_memory_limit(limit)?;
    }
    Ok(lua)
}

fn fresh_state(runtime: &Arc<RuntimeShared>, process: &Arc<ProcessCore>) -> mlua::Result<Lua> {
    // SAFETY: `unsafe_new_with` only allows loading the `debug` library, which stock
    // Lua programs expect (tracebacks, `debug.getupvalue`); Lutra never hands out
    // userdata whose memory safety depends on the metatable staying intact.
    let lua = unsafe { Lua::unsafe_new_with(StdLib::NONE, LuaOptions::new()) };
    clear_named(&lua)?;
    // Nothing built here is garbage: the collector waits until the state is ready (as
    // `lua.c` stops it while it opens the libraries), instead of walking it while it
    // grows.
    lua.gc_stop();
    lua.load_std_libs(StdLib::ALL)?;
    crate::popen::install(&lua)?;
    crate::early_hand_off::install(&lua)?;
    runtime.options.package_paths.install(&lua)?;
    bind(&lua, runtime, process);
    crate::api::install(&lua)?;
    let limit = runtime.recycle_limit.load(Ordering::Relaxed);
    runtime.states.prepare(&lua, limit)?;
    restart_collector(&lua)?;
    Ok(lua)
}

/// Restarts the collector of a new state as if a cycle had just ended (nothing in it
/// is garbage): the next cycle starts once the state has grown by the collector's
/// pause (200%: as much again as it holds), not at its first allocation, which would
/// walk the whole new state at once.
fn restart_collector(lua: &Lua) -> mlua::Result<()> {
    // SAFETY: `exec_raw` runs the closure in a protected call on `lua`'s stack, which
    // the `lua_gc` calls leave as it is. A step of a negative size is a credit
    // (`lua_gc`'s LUA_GCSTEP adds `size` KB to the collector's debt, in lapi.c): with
    // a negative debt the collector waits, as `setpause` in lgc.c makes it wait after
    // a cycle.
    unsafe {
        lua.exec_raw((), |state| {
            ffi::lua_gc(state, ffi::LUA_GCRESTART, 0);
            let held = ffi::lua_gc(state, ffi::LUA_GCCOUNT, 0);
            ffi::lua_gc(state, ffi::LUA_GCSTEP, -held);
        })
    }
}

/// Nulls the extra space of `lua`'s main thread (module invariants).
fn clear_named(lua: &Lua) -> mlua::Result<()> {
    // SAFETY: a protected call on `lua`'s stack, left as it was; the registry's
    // LUA_RIDX_MAINTHREAD entry is the main thread, whose extra space (a pointer's
    // worth, mlua's LUA_EXTRASPACE) is the program's to write.
    unsafe {
        lua.exec_raw((), |state| {
            ffi::lua_rawgeti(state, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_MAINTHREAD);
            let main = ffi::lua_tothread(state, -1);
            ffi::lua_pop(state, 1);
            name_context(main, std::ptr::null());
        })
    }
}

/// Names `context` (or null) in the extra space of `thread`.
///
/// # Safety
/// `thread` is a live Lua thread of a process's state; the module invariants hold
/// after the call.
pub(crate) unsafe fn name_context(thread: *mut ffi::lua_State, context: *const ProcessContext) {
    // SAFETY: the extra space is LUA_EXTRASPACE (a pointer's worth) bytes before the
    // thread, aligned as a pointer (Lua's `LX` puts it first), and the program's.
    unsafe { *ffi::lua_getextraspace(thread).cast::<*const ProcessContext>() = context }
}

/// The context named in the extra space of `state` (the main coroutine of the
/// process in the slice), if any.
///
/// # Safety
/// `state` is a running thread of a process's state (not of a host's); the
/// reference is used within the running native call only.
#[inline]
pub(crate) unsafe fn named_context<'a>(state: *mut ffi::lua_State) -> Option<&'a ProcessContext> {
    // SAFETY: the extra space holds null or the live context of the slice running
    // `state` (module invariants).
    unsafe { (*ffi::lua_getextraspace(state).cast::<*const ProcessContext>()).as_ref() }
}

/// Makes `lua` the state of `process`.
fn bind(lua: &Lua, runtime: &Arc<RuntimeShared>, process: &Arc<ProcessCore>) {
    lua.set_app_data(ProcessContext::new(runtime.clone(), process.clone()));
}

/// The context of the process whose slice this worker runs: the state of any Lua
/// code running on this thread inside a task (a process runs only in its slices, and
/// no other state runs inside one); `None` outside slices (host threads).
///
/// # Safety
/// The reference is used within the running native call only.
pub(crate) unsafe fn current<'a>() -> Option<&'a ProcessContext> {
    // SAFETY: a non-null slice context is alive for the slice (`Slice::enter`).
    unsafe { super::preempt::slice_context().as_ref() }
}

/// The address of `lua`'s process context (null for a state that is not Lutra's),
/// valid while the app data stays set.
pub(crate) fn context_ptr(lua: &Lua) -> *const ProcessContext {
    lua.app_data_ref::<ProcessContext>()
        .map_or(std::ptr::null(), |context| {
            &*context as *const ProcessContext
        })
}

#[cfg(test)]
mod tests {
    use super::restart_collector;
    use mlua::Lua;

    /// Makes garbage with a finalizer in a stopped state, restarts its collector with
    /// `restart`, then takes collector steps worth `kbytes` in all: whether the
    /// garbage was finalized.
    fn finalized_after(restart: fn(&Lua), kbytes: u32) -> bool {
        let lua = Lua::new();
        lua.gc_stop();
        lua.load("setmetatable({}, { __gc = function() finalized = true end })")
            .exec()
            .unwrap();
        restart(&lua);
        lua.load(format!(
            "for _ = 1, {kbytes} do collectgarbage('step', 1) end"
        ))
        .exec()
        .unwrap();
        lua.globals().get::<bool>("finalized").unwrap_or(false)
    }

    #[test]
    fn a_new_state_collects_only_once_it_has_grown() {
        assert!(
            finalized_after(|lua| lua.gc_restart(), 16),
            "a plain restart collects within the steps (the test's premise)"
        );
        assert!(!finalized_after(|lua| restart_collector(lua).unwrap(), 16));
        assert!(finalized_after(|lua| restart_collector(lua).unwrap(), 1024));
    }
}
