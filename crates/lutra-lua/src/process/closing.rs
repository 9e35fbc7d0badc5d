//! Closing a Lua state when the program is about to end: `lua_close` runs the
//! finalizers still pending in it, as always, but the memory of its objects is not
//! given back one object at a time (most of a close's cost): the OS takes it back at
//! once when the program ends.
//!
//! # Protocol
//! 1. [`close_all_leaving_memory`] detaches each state ([`detach`]): swaps its
//!    allocator (`lua_setallocf`) for [`exit_allocator`], whose user data is the
//!    state's own allocator and its user data ([`Original`], leaked), and forgets
//!    its mlua handle, keeping only the address of one of its threads
//!    ([`Detached`]). mlua's drop would first run a full collection (it collects
//!    before it closes), a walk over every live object that the close makes
//!    redundant (the close runs every pending finalizer); the handle's Rust side (its
//!    app data, mlua's own records) stays allocated with the objects.
//! 2. Dropping a [`Detached`] closes its state with `lua_close`: finalizers run and
//!    may allocate, through the original allocator; every free is skipped.
//! 3. The states are closed on as many threads as the machine has cores: a close
//!    walks every object of its state, in memory the program has not touched for a
//!    while, and waits on that memory more than it computes.
//!
//! # Invariants
//! - Only a state that nothing else references is closed so: no mlua value of it
//!   (table, function...) is alive outside it, so nothing reaches it once closed,
//!   and the thread that closes it is the only one that touches it.
//! - What is not freed stays allocated until the OS process ends (about 100 KB per
//!   state): for a program about to end only.

use mlua::Lua;
use mlua::ffi::{self, lua_Alloc, lua_State};
use std::ffi::c_void;

/// The allocator a state had before [`detach`], with its user data.
struct Original {
    alloc: lua_Alloc,
    ud: *mut c_void,
}

/// A thread of a detached state (step 1), which owns the state: dropping it closes
/// the state (step 2).
struct Detached(*mut lua_State);

impl Drop for Detached {
    fn drop(&mut self) {
        // SAFETY: `self.0` names a thread of a live state (its handle was forgotten,
        // not dropped) that nothing else references (module invariants); `lua_close`
        // closes the state of any of its threads (lstate.c), once: the forgotten
        // handle never closes it again.
        unsafe { ffi::lua_close(self.0) };
    }
}

// SAFETY: nothing but this value references the state (module invariants): the one
// thread that closes it is the only one that touches it.
unsafe impl Send for Detached {}

/// States below which closing them on other threads costs more than it saves.
const STATES_PER_THREAD: usize = 8;

/// Closes `states`, running their pending finalizers, without freeing their objects,
/// spread over the machine's cores (the protocol); returns once every one is closed.
pub(crate) fn close_all_leaving_memory(states: Vec<Lua>) {
    let mut detached: Vec<Detached> = states.into_iter().filter_map(detach).collect();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let threads = cores.min(detached.len() / STATES_PER_THREAD).max(1);
    let share = detached.len().div_ceil(threads);
    std::thread::scope(|scope| {
        while detached.len() > share {
            let theirs = detached.split_off(detached.len() - share);
            let spawned = std::thread::Builder::new()
                .name("lutra-close".into())
                .spawn_scoped(scope, move || drop(theirs));
            // No thread to spare: the error drops the closure, and with it closes
            // its states, here.
            drop(spawned);
        }
        drop(detached);
    });
}

/// Detaches `lua` (step 1); a state that cannot take the swap (no room for the call)
/// is closed at once, as usual, and `None` answered.
fn detach(lua: Lua) -> Option<Detached> {
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
    let thread = thread.ok()?;
    std::mem::forget(lua);
    Some(Detached(thread.0.cast()))
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
    use super::{Original, STATES_PER_THREAD, close_all_leaving_memory, exit_allocator};
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
        close_all_leaving_memory(vec![lua]);
        assert_eq!(witnessed(&path), "finalized 100");
    }
}
