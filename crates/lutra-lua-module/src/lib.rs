//! Lutra as a Lua 5.4 loadable module.
//!
//! `require "lutra"` (this library installed as `lutra.so`) and `require "luaproc"`
//! (a symbolic link `luaproc.so` to the same file) from a stock `lua5.4` give the host
//! the `lutra` and luaproc APIs over one runtime shared by every state of the OS
//! process (see `lutra_lua::open_module`):
//!
//! - processes run on the runtime's workers; the host's own thread is not a task, so
//!   a blocking call (`ch:receive()`, `luaproc.receive`, `lutra.wait()`...) parks the
//!   host's OS thread until woken, and raises a deadlock error if nothing can wake it;
//! - when the host state closes, the runtime waits for the processes still running
//!   (luaproc's implicit `wait`);
//! - the runtime's options come from `LUTRA_WORKERS`, `LUTRA_MAILBOX_CAP`,
//!   `LUTRA_MEMORY_LIMIT` and `LUTRA_PREEMPT`.

use mlua::{Lua, Table};

/// The allocator of every Rust allocation of the module, the processes' Lua states
/// included (the host's own state keeps the host's allocator): mimalloc, as in the
/// `lutra` program, so that the module runs processes at the program's speed
/// (glibc's malloc grows a worker thread's arena a page, a system call and a page
/// fault at a time).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `require "lutra"`: the `lutra` table.
#[mlua::lua_module(name = "lutra")]
fn lutra(lua: &Lua) -> mlua::Result<Table> {
    lutra_lua::open_module(lua)
}

/// `require "luaproc"`: luaproc's API table.
#[mlua::lua_module(name = "luaproc")]
fn luaproc(lua: &Lua) -> mlua::Result<Table> {
    lutra_lua::open_luaproc(lua)
}
