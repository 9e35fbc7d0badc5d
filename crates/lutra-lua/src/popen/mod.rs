//! `io.popen` in a process's state: lua5.4's, except for the flush before the command.
//!
//! lua5.4 flushes every C stream before it starts the command (`fflush(NULL)`), so
//! that what the program wrote comes before what the command writes. The C library
//! does that while holding its list of streams, waiting for each stream's lock in
//! turn. In one thread that never waits; with many processes in one OS process it
//! does: a stream another process is blocked reading (the pipe of its own
//! `io.popen`, a terminal, a FIFO) stays locked for as long as its read blocks, so an
//! `io.popen` in any other process would wait for that read, and every `io.open` and
//! `file:close` of every process behind it (they need the list too).
//!
//! Here the flush waits for no other process: it flushes each stream with pending
//! output whose lock it can take at once, while holding the list (a locked stream is
//! in use by another thread at that moment; its owner's output is not ordered
//! against this process's command anyway), then standard output and standard error,
//! outside the list, waiting for their locks as lua5.4 does. The rest is lua5.4's
//! `io.popen`: the same modes, the same file handle (a `luaL_Stream` with the
//! `FILE*` metatable), the same results from `popen` and `pclose`, except that a
//! simple command runs without the shell in between where the shell would add
//! nothing (`direct.rs`).
//!
//! # Invariants
//! - The list of streams is held only around non-blocking lock attempts and the
//!   flushes of the streams so locked (the C library's own order, list then stream);
//!   no stream lock is waited for while holding it.
//! - A pipe's handle says it is closed (`closef` null) until `popen` has answered, as
//!   lua5.4's does; a failed `popen` leaves a handle with no stream, which the
//!   collector skips.

mod direct;
pub(crate) mod wait;

use mlua::Lua;
use mlua::ffi::{self, lua_State};
use std::ffi::{c_char, c_int, c_void};

/// lauxlib.h's `luaL_Stream`: the userdata behind every Lua file handle.
#[repr(C)]
struct LuaStream {
    file: *mut libc::FILE,
    /// Closes `file`; null once closed (or while opening).
    close: Option<ffi::lua_CFunction>,
}

/// The userdata of this module's pipes: the file handle that the io library knows,
/// then the command's process when it was started without the shell (0 otherwise).
#[repr(C)]
struct PipeHandle {
    stream: LuaStream,
    child: libc::pid_t,
}

/// lauxlib.h's `LUA_FILEHANDLE`: the registry name of the file handles' metatable.
const FILE_HANDLE: &std::ffi::CStr = c"FILE*";

/// Replaces `io.popen` in `lua` (a process's state, its standard libraries open).
pub(crate) fn install(lua: &Lua) -> mlua::Result<()> {
    let io: mlua::Table = lua.globals().get("io")?;
    // SAFETY: `open_pipe` follows the Lua C API's rules for a C function (module
    // header); it raises errors only through `luaL_argerror`/`luaL_checklstring`,
    // with no Rust value alive that needs dropping.
    let popen = unsafe { lua.create_c_function(open_pipe)? };
    io.set("popen", popen)
}

/// `io.popen(prog [, mode])`: lua5.4's (`liolib.c`), flushing as the module header says.
unsafe extern "C-unwind" fn open_pipe(state: *mut lua_State) -> c_int {
    // SAFETY: a C function called by Lua with its arguments on `state`'s stack; the
    // strings Lua returns stay valid while their values are on the stack (they are,
    // at positions 1 and 2, until the function returns).
    unsafe {
        let command = ffi::luaL_checklstring(state, 1, std::ptr::null_mut());
        let mode = ffi::luaL_optlstring(state, 2, c"r".as_ptr(), std::ptr::null_mut());
        if !valid_mode(mode) {
            return ffi::luaL_argerror(state, 2, c"invalid mode".as_ptr());
        }
        let handle = ffi::lua_newuserdatauv(state, size_of::<PipeHandle>(), 0).cast::<PipeHandle>();
        handle.write(PipeHandle {
            stream: LuaStream {
                file: std::ptr::null_mut(),
                close: None,
            },
            child: 0,
        });
        ffi::luaL_setmetatable(state, FILE_HANDLE.as_ptr());
        flush_output_streams();
        let reading = *mode == b'r' as c_char;
        let started = match direct::simple_command(std::ffi::CStr::from_ptr(command)) {
            Some(words) => direct::spawn(&words, reading),
            None => direct::Spawned::NotStarted,
        };
        let (file, close, child): (_, ffi::lua_CFunction, _) = match started {
            direct::Spawned::Running(child) => (child.file, close_direct_pipe, child.pid),
            direct::Spawned::NotStarted => (libc::popen(command, mode), close_pipe, 0),
            direct::Spawned::Failed => (std::ptr::null_mut(), close_pipe, 0),
        };
        (*handle).stream.file = file;
        (*handle).stream.close = Some(close);
        (*handle).child = child;
        if file.is_null() {
            return ffi::luaL_fileresult(state, 0, command);
        }
        1
    }
}

/// Whether `mode` is `"r"` or `"w"` (lua5.4's `l_checkmodep`).
///
/// # Safety
/// `mode` is a NUL-terminated string.
unsafe fn valid_mode(mode: *const c_char) -> bool {
    // SAFETY: the caller's.
    let mode = unsafe { std::ffi::CStr::from_ptr(mode) }.to_bytes();
    mode == b"r" || mode == b"w"
}

/// Whether the file handle at stack position `index` is an open `io.popen` pipe of
/// this module, and then its stream.
///
/// # Safety
/// `state` is a Lua thread with a value at `index`.
pub(crate) unsafe fn pipe_at(state: *mut lua_State, index: c_int) -> Option<*mut libc::FILE> {
    // SAFETY: `luaL_testudata` checks the metatable before the cast; a `FILE*` handle
    // is a `LuaStream`.
    unsafe {
        let stream = ffi::luaL_testudata(state, index, FILE_HANDLE.as_ptr()).cast::<LuaStream>();
        let ours = stream.as_ref()?.close.is_some_and(|close| {
            std::ptr::fn_addr_eq(close, close_pipe as ffi::lua_CFunction)
                || std::ptr::fn_addr_eq(close, close_direct_pipe as ffi::lua_CFunction)
        });
        (ours && !(*stream).file.is_null()).then(|| (*stream).file)
    }
}

/// Whether a read of `file` would wait: nothing buffered in the stream, and nothing
/// (not even the end of the file) to read from its descriptor yet.
///
/// # Safety
/// `file` is an open stream that no other thread is reading.
pub(crate) unsafe fn read_would_wait(file: *mut libc::FILE) -> bool {
    // SAFETY: the caller's contract; `poll` with a zero timeout never waits.
    unsafe {
        if glibc_input_buffered(file) {
            return false;
        }
        let mut ready = libc::pollfd {
            fd: libc::fileno(file),
            events: libc::POLLIN,
            revents: 0,
        };
        ready.fd >= 0 && libc::poll(&mut ready, 1, 0) == 0
    }
}

/// Whether `file` holds read-ahead input in its buffer (assumed on C libraries other
/// than glibc, whose stream layout this does not know: no early hand-off there).
///
/// # Safety
/// As [`read_would_wait`].
unsafe fn glibc_input_buffered(file: *mut libc::FILE) -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: the caller's contract.
    return unsafe { glibc::input_buffered(file) };
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    return true;
}

/// The pipe's `close` (its handle's `closef`): waits for the command and answers as
/// `os.execute` does (lua5.4's `io_pclose`).
unsafe extern "C-unwind" fn close_pipe(state: *mut lua_State) -> c_int {
    // SAFETY: called by the io library's close with the handle at position 1, which
    // it has checked to be a file handle (so a `LuaStream`) whose `closef` this is.
    unsafe {
        let stream = ffi::luaL_checkudata(state, 1, FILE_HANDLE.as_ptr()).cast::<LuaStream>();
        *libc::__errno_location() = 0;
        ffi::luaL_execresult(state, libc::pclose((*stream).file))
    }
}

/// The `close` of a pipe to a command started without the shell: closes the stream,
/// then waits for the command, answering as [`close_pipe`] does.
unsafe extern "C-unwind" fn close_direct_pipe(state: *mut lua_State) -> c_int {
    // SAFETY: as `close_pipe`'s; a handle with this `closef` is a `PipeHandle` whose
    // `child` was started by `direct::spawn` and not yet waited for (the io library
    // calls `closef` once: it marks the handle closed first).
    unsafe {
        let handle = ffi::luaL_checkudata(state, 1, FILE_HANDLE.as_ptr()).cast::<PipeHandle>();
        libc::fclose((*handle).stream.file);
        *libc::__errno_location() = 0;
        ffi::luaL_execresult(state, direct::wait((*handle).child))
    }
}

/// Flushes the pending output of every C stream that no other thread is using, then
/// standard output and standard error (module header).
fn flush_output_streams() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    glibc::flush_unused_streams();
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    // SAFETY: `fflush(NULL)` has no preconditions (this is lua5.4's own flush).
    unsafe {
        libc::fflush(std::ptr::null_mut());
    }
    // SAFETY: the C library's standard streams, which Lua never closes (its handles
    // for them close nothing); `fflush` takes each stream's lock.
    unsafe {
        libc::fflush(standard::output());
        libc::fflush(standard::error());
    }
}

/// The C library's standard output and error streams.
mod standard {
    unsafe extern "C" {
        static mut stdout: *mut libc::FILE;
        static mut stderr: *mut libc::FILE;
    }

    /// `stdout`.
    pub(super) fn output() -> *mut libc::FILE {
        // SAFETY: a read of the C library's variable, which only `freopen`-like code
        // at start-up would change.
        unsafe { std::ptr::addr_of!(stdout).read() }
    }

    /// `stderr`.
    pub(super) fn error() -> *mut libc::FILE {
        // SAFETY: as `output`'s.
        unsafe { std::ptr::addr_of!(stderr).read() }
    }
}

/// The walk over glibc's list of streams (`_IO_list_all`, linked through `_chain`,
/// guarded by `_IO_list_lock`: all exported by glibc since 2.2.5, as libio's ABI).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod glibc {
    use super::c_void;
    use std::ffi::{c_char, c_int};

    /// The head of glibc's `struct _IO_FILE` (`<bits/types/struct_FILE.h>`), up to
    /// the link to the next stream: a layout fixed by glibc's ABI (the `getc_unlocked`
    /// macros read these fields from programs' code).
    #[repr(C)]
    struct FileHead {
        flags: c_int,
        read_ptr: *mut c_char,
        read_end: *mut c_char,
        read_base: *mut c_char,
        write_base: *mut c_char,
        write_ptr: *mut c_char,
        write_end: *mut c_char,
        buf_base: *mut c_char,
        buf_end: *mut c_char,
        save_base: *mut c_char,
        backup_base: *mut c_char,
        save_end: *mut c_char,
        markers: *mut c_void,
        chain: *mut FileHead,
    }

    #[cfg(target_pointer_width = "64")]
    const _: () = assert!(std::mem::offset_of!(FileHead, chain) == 104);

    unsafe extern "C" {
        static mut _IO_list_all: *mut FileHead;
        fn _IO_list_lock();
        fn _IO_list_unlock();
        fn ftrylockfile(file: *mut libc::FILE) -> c_int;
        fn funlockfile(file: *mut libc::FILE);
        fn fflush_unlocked(file: *mut libc::FILE) -> c_int;
    }

    /// Whether `file` holds read-ahead input in its buffer.
    ///
    /// # Safety
    /// `file` is an open stream that no other thread is using.
    pub(super) unsafe fn input_buffered(file: *mut libc::FILE) -> bool {
        // SAFETY: the caller's contract; the fields are the ABI's (see `FileHead`).
        unsafe {
            let head = file.cast::<FileHead>();
            (*head).read_ptr < (*head).read_end
        }
    }

    /// Flushes every stream with pending output whose lock is free (module header).
    pub(super) fn flush_unused_streams() {
        // SAFETY: the list is walked under its lock, so no stream in it is unlinked
        // (closed) meanwhile; a stream's buffer pointers are read and flushed only
        // with the stream's own lock held (taken without waiting), as glibc's
        // `_IO_flush_all` reads them.
        unsafe {
            _IO_list_lock();
            let mut stream = std::ptr::addr_of!(_IO_list_all).read();
            while !stream.is_null() {
                let file = stream.cast::<libc::FILE>();
                if ftrylockfile(file) == 0 {
                    if (*stream).write_ptr > (*stream).write_base {
                        fflush_unlocked(file);
                    }
                    funlockfile(file);
                }
                stream = (*stream).chain;
            }
            _IO_list_unlock();
        }
    }
}
