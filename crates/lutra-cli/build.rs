//! Exports the Lua C API from the `lutra` binary, so that C modules built for Lua 5.4
//! (`require "lpeg"`, `cjson`, a LuaRocks rock) find `lua_gettop`, `luaL_setfuncs`...
//! when `require` loads them with `dlopen`, as they find them in Debian's `lua5.4`
//! (linked with `-Wl,-E`).
//!
//! mlua links Lua statically from an archive built by `lua-src`: the linker takes only
//! the members, and with `--gc-sections` only the functions, that Rust code calls.
//! So each symbol of `lua-api.syms` is both
//! 1. marked undefined (`-u`), which pulls its archive member in, and
//! 2. listed in a dynamic list (`--dynamic-list`), which exports it and so keeps its
//!    section alive through `--gc-sections`.
//!
//! Exporting only the API (not `-Wl,-E`) keeps Rust's own symbols private.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let list = "lua-api.syms";
    println!("cargo:rerun-if-changed={list}");
    println!("cargo:rerun-if-changed=build.rs");
    let text = std::fs::read_to_string(list).expect("crates/lutra-cli/lua-api.syms is readable");
    let symbols: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect();
    let mut dynamic_list = String::from("{\n");
    for symbol in &symbols {
        let _ = writeln!(dynamic_list, "  {symbol};");
    }
    dynamic_list.push_str("};\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let path = out.join("lua-api.dynlist");
    std::fs::write(&path, dynamic_list).expect("OUT_DIR is writable");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    println!(
        "cargo:rustc-link-arg-bins=-Wl,--dynamic-list={}",
        path.display()
    );
    for symbol in symbols {
        println!("cargo:rustc-link-arg-bins=-Wl,-u,{symbol}");
    }
}
