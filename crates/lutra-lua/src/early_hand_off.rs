//! C calls known to block hand their worker over before they block (step 7 of
//! `process/preempt.rs`), instead of a threshold after (step 6), as Go's runtime
//! hands off its processor in `entersyscallblock`: the worker's other processes do
//! not wait for the threshold, and the timer has nothing to find.
//!
//! Known to block, and wrapped here in a process's state:
//! - `os.execute(command)`: it waits for the command (a shell at least), always
//!   longer than the threshold. `os.execute()` without a command, which only asks
//!   whether a shell exists, is left alone.
//! - `file:read(...)` on a pipe of `io.popen` (`popen/mod.rs`) with nothing to read
//!   yet (nothing buffered in its stream, and its descriptor not ready: `poll` with no
//!   wait), where its process cannot park; where it can, the read parks the process
//!   until the pipe is ready instead (`popen/wait.rs`) and needs no hand-off. Other
//!   files, and pipes with input waiting, read as before.
//!
//! Each wrapper calls the standard library's own function afterwards, with the same
//! stack: results and errors are lua5.4's. (`file:lines` on an `io.popen` pipe in a
//! process is wrapped too, so that its reads go through the wrapped `file:read`.)
//!
//! # Invariants
//! - The standard functions wrapped are the same in every state (the Lua library's
//!   C functions), kept once per OS process in [`STANDARD`].
//! - A hand-off happens only inside a slice with preemption on, on the thread the
//!   slice names (`hand_off_before_blocking`), so the armed hook ends the slice once
//!   the call returns.

use crate::process::preempt::hand_off_before_blocking;
use mlua::Lua;
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;
use std::sync::OnceLock;

/// The standard library's `os.execute`, `file:read` and `file:lines`.
struct Standard {
    execute: ffi::lua_CFunction,
    read: ffi::lua_CFunction,
    lines: ffi::lua_CFunction,
}

static STANDARD: OnceLock<Standard> = OnceLock::new();

/// Wraps `os.execute` and the file handles' `read` and `lines` in `lua` (a process's
/// state, its standard libraries open and `io.popen` replaced). Fails if any is not a
/// C function.
pub(crate) fn install(lua: &Lua) -> mlua::Result<()> {
    // SAFETY: a protected call on `lua`'s stack, left as it was: each field is read,
    // kept if it is a C function, and replaced by its wrapper (C functions that follow
    // the Lua C API's rules: they hand their stack to the standard function and keep
    // no Rust value alive across it).
    let wrapped = unsafe {
        lua.exec_raw::<bool>((), |state| {
            ffi::lua_getglobal(state, c"os".as_ptr());
            let execute = replace(state, c"execute", self::execute);
            ffi::luaL_getmetatable(state, c"FILE*".as_ptr());
            ffi::lua_getfield(state, -1, c"__index".as_ptr());
            let read = replace(state, c"read", self::read);
            let lines = replace(state, c"lines", self::lines);
            ffi::lua_settop(state, 0);
            let kept = match (execute, read, lines) {
                (Some(execute), Some(read), Some(lines)) => {
                    STANDARD.get_or_init(|| Standard {
                        execute,
                        read,
                        lines,
                    });
                    true
                }
                _ => false,
            };
            ffi::lua_pushboolean(state, kept as c_int);
        })?
    };
    if wrapped {
        Ok(())
    } else {
        Err(mlua::Error::runtime(
            "os.execute, file:read or file:lines is not a C function",
        ))
    }
}

/// Replaces field `name` of the table on top of `state`'s stack with `wrapper`, if
/// it is a C function; returns that function.
///
/// # Safety
/// `state` has a table on top of its stack and room for two values.
unsafe fn replace(
    state: *mut lua_State,
    name: &std::ffi::CStr,
    wrapper: ffi::lua_CFunction,
) -> Option<ffi::lua_CFunction> {
    // SAFETY: the caller's contract; the stack is left as it was.
    unsafe {
        ffi::lua_getfield(state, -1, name.as_ptr());
        let standard = ffi::lua_tocfunction(state, -1);
        ffi::lua_pop(state, 1);
        if standard.is_some() {
            ffi::lua_pushcfunction(state, wrapper);
            ffi::lua_setfield(state, -2, name.as_ptr());
        }
        standard
    }
}

/// `os.execute([command])`, handing the worker over first when there is a command.
unsafe extern "C-unwind" fn execute(state: *mut lua_State) -> c_int {
    // SAFETY: a C function called by Lua; the standard one gets the same stack.
    unsafe {
        if ffi::lua_type(state, 1) == ffi::LUA_TSTRING {
            hand_off_before_blocking(state);
        }
        (standard().execute)(state)
    }
}

/// `file:read(...)`: when the file is an `io.popen` pipe with nothing to read yet,
/// parks the process until it has (`popen/wait.rs`), or where it cannot park, hands
/// the worker over first.
unsafe extern "C-unwind" fn read(state: *mut lua_State) -> c_int {
    // SAFETY: a C function called by Lua; the stream belongs to this process's state
    // (file handles cannot cross between processes), so no other thread reads it.
    unsafe {
        if let Some(file) = crate::popen::pipe_at(state, 1)
            && crate::popen::read_would_wait(file)
        {
            if crate::popen::wait::can_park(state) {
                return crate::popen::wait::read_parked(state, standard().read);
            }
            hand_off_before_blocking(state);
        }
        (standard().read)(state)
    }
}

/// `file:lines(...)`: on an `io.popen` pipe in a process, an iterator that reads with
/// the wrapped `file:read` (`popen/wait.rs`), which parks the process while the pipe
/// has nothing to read; the standard iterator elsewhere.
unsafe extern "C-unwind" fn lines(state: *mut lua_State) -> c_int {
    // SAFETY: a C function called by Lua; the standard one gets the same stack.
    unsafe {
        if crate::popen::pipe_at(state, 1).is_some() && crate::process::state::current().is_some() {
            return crate::popen::wait::pipe_lines(state, standard().lines);
        }
        (standard().lines)(state)
    }
}

fn standard() -> &'static Standard {
    STANDARD
        .get()
        .expect("the standard functions are kept before their wrappers are installed")
}
