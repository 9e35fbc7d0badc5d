//! A read of an `io.popen` pipe with nothing to read yet parks its process until the
//! pipe has input (`readiness.rs`), instead of blocking its thread: the worker runs
//! other processes meanwhile and no spare thread is needed.
//!
//! `file:read` on such a pipe (`early_hand_off.rs`'s wrapper) calls the prelude's
//! `read_pipe(read, file, ...)` when the process can park there (inside a slice, not
//! in `atomic`, where its thread can yield). `read_pipe` watches the pipe
//! (`raw.watch_pipe`), parks (`PARK`, up through the user's coroutines), ends the
//! watch (`raw.unwatch_pipe`) and looks again, then reads with the standard `read`:
//! its results and errors are lua5.4's. A read that needs more than what came (a line
//! not yet complete) blocks in the standard `read` as other C calls do, and is handed
//! off after the threshold (`process/blocked.rs`). `file:lines(...)` on such a pipe
//! returns the prelude's `pipe_lines` iterator, which reads through that `file:read`
//! and answers as lua5.4's iterator does.
//!
//! # Invariants
//! - Only a pipe opened for reading is watched: a read of a write-mode pipe fails at
//!   once in the standard `read`, and its descriptor would never become readable.
//! - Every watch made by `raw.watch_pipe` is ended by `raw.unwatch_pipe` once the
//!   process runs again, whatever woke it (input, a cancellation): no watch outlives
//!   the read it was made for (`readiness.rs`'s invariants).

use crate::api::native::returned;
use crate::api::{RawEntry, function};
use crate::process::ProcessContext;
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;

/// Registry key of the prelude's `read_pipe`.
pub(crate) const READ_PIPE_KEY: &std::ffi::CStr = c"lutra.read_pipe";

/// Registry key of the prelude's `pipe_lines`.
pub(crate) const PIPE_LINES_KEY: &std::ffi::CStr = c"lutra.pipe_lines";

/// The raw functions of this module (see `api::RawEntry`).
pub(crate) const RAW: &[RawEntry] = &[
    ("watch_pipe", |lua| {
        // SAFETY: `watch_pipe` follows the lua_CFunction protocol.
        let watch = unsafe { lua.create_c_function(watch_pipe) };
        watch.map(mlua::Value::Function)
    }),
    ("unwatch_pipe", |lua| {
        function(lua, |lua, token: u64| {
            ProcessContext::of(lua)?.runtime.readiness.unwatch(token);
            Ok(())
        })
    }),
];

/// Whether the read of the pipe `file` by the running thread `state` can park its
/// process instead of blocking: inside a slice, outside `atomic`, on a thread that
/// can yield.
///
/// # Safety
/// `state` is the running thread.
pub(crate) unsafe fn can_park(state: *mut lua_State) -> bool {
    // SAFETY: the slice's context is alive for the slice; `state` is running.
    unsafe {
        crate::process::state::current().is_some_and(|context| {
            !context
                .no_preempt
                .load(std::sync::atomic::Ordering::Relaxed)
        }) && ffi::lua_isyieldable(state) != 0
    }
}

/// `file:read(...)` through the prelude's `read_pipe`, with the standard `read`
/// first: the wrapper's stack (`file` and the formats) becomes `read_pipe(read, file,
/// ...)`, whose results are the call's.
///
/// # Safety
/// Called from a C function of Lua's (the wrapper) on the running thread `state`,
/// as its last step; [`can_park`] holds.
pub(crate) unsafe fn read_parked(state: *mut lua_State, read: ffi::lua_CFunction) -> c_int {
    // SAFETY: stack operations on the running thread with room checked; `lua_callk`
    // with a continuation lets `read_pipe` yield, and the continuation returns what
    // the call left on the stack.
    unsafe {
        if ffi::lua_checkstack(state, 2) == 0 {
            return read(state);
        }
        ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, READ_PIPE_KEY.as_ptr());
        ffi::lua_pushcfunction(state, read);
        ffi::lua_rotate(state, 1, 2);
        let arguments = ffi::lua_gettop(state) - 1;
        ffi::lua_callk(state, arguments, ffi::LUA_MULTRET, 0, Some(returned));
        returned(state, ffi::LUA_OK, 0)
    }
}

/// `file:lines(...)` of the `io.popen` pipe at 1: the standard `lines` checks the
/// arguments (and raises as lua5.4 does), then the prelude's `pipe_lines(file, ...)`
/// makes the iterator, which reads with `file:read`.
///
/// # Safety
/// Called from a C function of Lua's (the wrapper) on the running thread `state`,
/// as its last step.
pub(crate) unsafe fn pipe_lines(state: *mut lua_State, lines: ffi::lua_CFunction) -> c_int {
    // SAFETY: stack operations on the running thread with room checked; both calls
    // are ordinary Lua calls (an error raised in them unwinds this frame, which owns
    // nothing).
    unsafe {
        let arguments = ffi::lua_gettop(state);
        if ffi::lua_checkstack(state, arguments + 1) == 0 {
            return lines(state);
        }
        ffi::lua_pushcfunction(state, lines);
        for index in 1..=arguments {
            ffi::lua_pushvalue(state, index);
        }
        ffi::lua_call(state, arguments, 0);
        ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, PIPE_LINES_KEY.as_ptr());
        ffi::lua_rotate(state, 1, 1);
        ffi::lua_call(state, arguments, 1);
        1
    }
}

/// `raw.watch_pipe(file)`: the token of a new watch of the `io.popen` pipe `file` for
/// the calling process (woken once the pipe has input, its end or an error), or nil
/// when there is no need or no way to wait here: input is waiting, `file` is not a
/// pipe open for reading, the caller is no process, or the poller refused the watch.
///
/// # Safety
/// Called by Lua as a C function.
unsafe extern "C-unwind" fn watch_pipe(state: *mut lua_State) -> c_int {
    // SAFETY: the running thread with its argument at 1; the stream is this
    // process's (file handles cannot cross between processes), read by no other
    // thread; the slice's context is alive for the slice.
    unsafe {
        let token = crate::popen::pipe_at(state, 1).and_then(|file| {
            if !crate::popen::read_would_wait(file) {
                return None;
            }
            let fd = libc::fileno(file);
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags < 0 || flags & libc::O_ACCMODE == libc::O_WRONLY {
                return None;
            }
            let context = crate::process::state::current()?;
            let waker = crate::wakers::current_waker();
            context.runtime.readiness.watch(fd, waker).ok()
        });
        match token.and_then(|token| ffi::lua_Integer::try_from(token).ok()) {
            Some(token) => ffi::lua_pushinteger(state, token),
            None => ffi::lua_pushnil(state),
        }
        1
    }
}
