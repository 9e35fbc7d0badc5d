//! The main process's program: `driver.lua`, given the command line and the steps
//! it implies (lua.c's `pmain`, in the order lua.c takes them).
//!
//! # Protocol (the driver's arguments; see the header of `driver.lua`)
//! 1. The number of command-line arguments, the script's place among them, the
//!    arguments themselves: the driver lays out `arg` from them.
//! 2. Steps of three strings: `LUA_INIT` (unless `-E`), then `-e` / `-l` / `-W` in
//!    the order given, then the script (a file or standard input), then the prompt.
//!    With no script: the prompt (after the version) when standard input is a
//!    terminal, else standard input runs as a script whose errors are reported
//!    but leave the exit status 0, unless `-e` or `-v` was given (then nothing
//!    more runs): all as under lua5.4.

use crate::command_line::{Invocation, Step};
use std::io::IsTerminal;

/// The driver's source.
pub(crate) const SOURCE: &str = include_str!("driver.lua");

/// The driver's chunk name: the runtime leaves frames of a chunk named `lutra` out of
/// tracebacks.
pub(crate) const CHUNK_NAME: &str = "=lutra";

/// The driver's arguments for `invocation` (see the module's protocol).
pub(crate) fn arguments(invocation: &Invocation) -> Vec<String> {
    let mut args = vec![
        invocation.argv.len().to_string(),
        invocation.script.to_string(),
    ];
    args.extend(invocation.argv.iter().cloned());
    let mut step = |kind: &str, a: &str, b: &str| {
        args.extend([kind.to_owned(), a.to_owned(), b.to_owned()]);
    };
    if invocation.version {
        step("print", &lua_copyright(), "");
    }
    if let Some((name, code)) = lua_init().filter(|_| !invocation.ignore_env) {
        step("init", &name, &code);
    }
    let mut executed = false;
    for s in &invocation.steps {
        match s {
            Step::Execute(code) => {
                executed = true;
                step("e", code, "");
            }
            Step::Library(spec) => step("l", spec, ""),
            Step::Warnings => step("W", "", ""),
        }
    }
    if invocation.script_is_stdin() {
        step("stdin", "", "");
    } else if let Some(script) = invocation.script_name() {
        step("file", script, "");
    }
    if invocation.interactive {
        step("repl", "", "");
    } else if invocation.script == 0 && !executed && !invocation.version {
        if std::io::stdin().is_terminal() {
            step("print", &lua_copyright(), "");
            step("repl", "", "");
        } else {
            step("dofile", "", "");
        }
    }
    args
}

/// `LUA_INIT_5_4`, else `LUA_INIT`: the chunk name lua.c gives it and its text.
fn lua_init() -> Option<(String, String)> {
    ["LUA_INIT_5_4", "LUA_INIT"].iter().find_map(|name| {
        std::env::var(name)
            .ok()
            .map(|code| (format!("={name}"), code))
    })
}

/// The embedded Lua's copyright line, as `lua5.4 -v` prints it
/// (`Lua 5.4.N  Copyright (C) 1994-YYYY Lua.org, PUC-Rio`).
pub(crate) fn lua_copyright() -> String {
    unsafe extern "C" {
        /// lapi.c: `"$LuaVersion: " LUA_COPYRIGHT " $" "$LuaAuthors: " LUA_AUTHORS " $"`.
        static lua_ident: std::ffi::c_char;
    }
    // SAFETY: `lua_ident` is the vendored Lua's NUL-terminated constant string.
    let ident = unsafe { std::ffi::CStr::from_ptr(&raw const lua_ident) };
    let ident = ident.to_string_lossy();
    ident
        .strip_prefix("$LuaVersion: ")
        .and_then(|rest| rest.split(" $").next())
        .unwrap_or("Lua 5.4")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::lua_copyright;

    #[test]
    fn the_copyright_is_lua_54s() {
        let text = lua_copyright();
        assert!(text.starts_with("Lua 5.4."), "{text}");
        assert!(text.contains("Copyright (C) 1994-"), "{text}");
        assert!(text.ends_with("Lua.org, PUC-Rio"), "{text}");
    }
}
