//! Closing a Lua state when the program is about to end: `lua_close` runs the
//! finalizers still pending in it, as always, but the memory of its objects is not
//! given back one object at a time (most of a close's cost): the OS takes it back at
//! once when the program ends.
//!
//! # Protocol
//! 1. [`close_leaving_memory`] swaps the state's allocator (`lua_setallocf`) for
//!    [`exit_allocator`], whose user data is the state's own allocator and its user
//!    data ([`Original`], leaked).
//! 2. The state is closed with `lua_close` itself, and its mlua handle forgotten:
//!    mlua's drop would first run a full collection (it collects before it closes),
//!    a walk over every live object that the close makes redundant (the close runs
//!    every pending finalizer). Finalizers run and may allocate, through the
//!    original allocator; every free is skipped. The handle's Rust side (its app
//!    data, mlua's own records) stays allocated with the objects.
//! 3. Many states ([`close_all_leaving_memory`]) are closed on as many threads as
//!    the machine has cores: a close walks every object of its state, in memory the
//!    program has not touched for a while, and waits on that memory more than it
//!    computes.
//!
//! # Invariants
//! - Only a state that nothing else references is closed so: no mlua value of it
//!   (table, function...) is alive outside it, so nothing reaches it once closed.
//! - What is not freed stays allocated until the OS process ends (about 100 KB per
//!   state): for a program about to end only.

use mlua::Lua;
use mlua::ffi::{self, lua_Alloc};
use std::ffi::c_void;

/// The allocator a state had before [`close_leaving_memory`], with its user data.
struct Original {
    alloc: lua_Alloc,
    ud: *mut c_void,
}

/// States below which closing them on other threads costs more than it saves.
const STATES_PER_THREAD: usize = 8;

/// Closes `states` as [`close_leaving_memory`] does, spread over the machine's cores
/// (step 3); returns once every one is closed.
pub(crate) fn close_all_leaving_memory(mut states: Vec<Lua>) {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let threads = cores.min(states.len() / STATES_PER_THREAD).max(1);
    let share = states.len().div_ceil(threads);
    std::thread::scope(|scope| {
        while states.len() > share {
            let theirs = states.split_off(states.len() - share);
            let spawned = std::thread::Builder::new()
                .name("lutra-close".into())
                .spawn_scoped(scope, move || {
                    theirs.into_iter().for_each(close_leaving_memory)
                });
            // No thread to spare: the states go with the closure the error drops,
            // closed here the usual way (their memory freed).
            drop(spawned);
        }
        states.into_iter().for_each(close_leaving_memory);
    });
}

/// Closes `lua` (running its pending finalizers) without freeing its objects.
pub(crate) fn close_leaving_memory(lua: Lua) {
    // SAFETY: `exec_raw` runs the closure in a protected call on `lua`'s stack, which
    // it leaves with one value, the thread's address (the answer); the new
    // allocator's user data is leaked, so it outlives the state; `exit_allocator`
    // keeps `lua_Alloc`'s contract (see its comment).
    let thread = unsafe {
        lua.exec_raw::<mlua::LightUserData>((), |state| {
            let mut ud = std::ptr::null_mut();
            let alloc = ffi::lua_getallocf(state, &mut ud);
            let original = Box::into_raw(Box::new(Original { alloc, ud }));
            ffi::lua_setallocf(state, exit_allocator, original.cast());
            ffi::lua_pushlightuserdata(state, state.cast());
        })
    };
    let Ok(thread) = thread else {
        // No room for the call: the allocator is as it was; closed as usual.
        drop(lua);
        return;
    };
    std::mem::forget(lua);
    // SAFETY: `thread` is a thread of the state, which is alive (its handle was
    // forgotten, not dropped) and which nothing else references (module invariant);
    // `lua_close` closes the state of any of its threads (lstate.c), once: the
    // forgotten handle never closes it again.
    unsafe { ffi::lua_close(thread.0.cast()) };
}

/// A `lua_Alloc` that frees nothing and allocates (or reallocates) with the
/// original allocator in `ud` (an [`Original`]).
///
/// # Safety
/// `ud` is an [`Original`] that outlives the state; called by Lua as its allocator.
unsafe extern "C" fn exit_allocator(
    ud: *mut c_void,
    ptr: *mut c_void,
    osize: usize,
    nsize: usize,
) -> *mut c_void {
    if nsize == 0 {
        // Lua ignores what a free returns; the block is left to the OS.
        return std::ptr::null_mut();
    }
    // SAFETY: `ud` is the leaked `Original` (the function's contract); the original
    // allocator gets the same request, with its own user data.
    unsafe {
        let original = &*(ud as *const Original);
        (original.alloc)(original.ud, ptr, osize, nsize)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::{
        Original, STATES_PER_THREAD, close_all_leaving_memory, close_leaving_memory, exit_allocator,
    };
    use mlua::Lua;
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static CALLS: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn counting(
        _: *mut c_void,
        _: *mut c_void,
        _: usize,
        nsize: usize,
    ) -> *mut c_void {
        CALLS.fetch_add(1, Ordering::Relaxed);
        std::ptr::dangling_mut::<u8>().wrapping_add(nsize).cast()
    }

    #[test]
    fn the_exit_allocator_allocates_through_the_original_and_frees_nothing() {
        let mut original = Original {
            alloc: counting,
            ud: std::ptr::null_mut(),
        };
        let ud = (&raw mut original).cast::<c_void>();
        let block = std::ptr::dangling_mut::<c_void>();
        // SAFETY: `ud` is an `Original` alive for the calls; `counting` touches no
        // memory.
        unsafe {
            assert!(!exit_allocator(ud, std::ptr::null_mut(), 0, 16).is_null());
            assert!(!exit_allocator(ud, block, 16, 32).is_null());
            assert!(exit_allocator(ud, block, 32, 0).is_null());
        }
        assert_eq!(CALLS.load(Ordering::Relaxed), 2, "the free was passed on");
    }

    /// A file the finalizers of a test's state write to (Rust callbacks cannot be
    /// called while a state closes: mlua has let go of them).
    pub(crate) fn witness(test: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("lutra-{test}-{}", std::process::id()))
    }

    /// What the finalizers wrote to `path` (removing it).
    pub(crate) fn witnessed(path: &std::path::Path) -> String {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let _ = std::fs::remove_file(path);
        text
    }

    #[test]
    fn every_state_of_many_is_closed() {
        let path = witness("closing-many");
        let states: Vec<Lua> = (0..3 * STATES_PER_THREAD)
            .map(|_| {
                let lua = Lua::new();
                lua.load(
                    r#"
                    local path = ...
                    kept = setmetatable({}, { __gc = function()
                      local file = io.open(path, "a")
                      file:write("x")
                      file:close()
                    end })
                    "#,
                )
                .call::<()>(path.to_str().unwrap())
                .unwrap();
                lua
            })
            .collect();
        close_all_leaving_memory(states);
        assert_eq!(witnessed(&path), "x".repeat(3 * STATES_PER_THREAD));
    }

    #[test]
    fn finalizers_run_when_a_state_is_closed_leaving_its_memory() {
        let path = witness("closing");
        let lua = Lua::new();
        lua.load(
            r#"
            local path = ...
            kept = setmetatable({}, { __gc = function()
              local grow = {}
              for i = 1, 100 do grow[i] = { i } end
              local file = io.open(path, "w")
              file:write("finalized ", #grow)
              file:close()
            end })
            "#,
        )
        .call::<()>(path.to_str().unwrap())
        .unwrap();
        close_leaving_memory(lua);
        assert_eq!(witnessed(&path), "finalized 100");
    }
}
