//! C modules under the `lutra` program: the binary exports every function of the Lua
//! 5.4 C API (Debian's headers name them), and a pure-C rock that LuaRocks builds
//! offline into a user tree (`luarocks make --local`, `HOME` a fresh directory) loads
//! inside a process from the default `package.cpath`. Debian's own modules (lpeg,
//! cjson, lfs, socket) are tried by tests/lua/c_modules.lua.

mod common;

use std::path::Path;
use std::process::Command;

/// The Lua C API functions declared in Debian's Lua 5.4 headers (`LUA_API`,
/// `LUALIB_API`, `LUAMOD_API` declarations).
fn declared_api() -> Vec<String> {
    let mut names = Vec::new();
    for header in ["lua.h", "lauxlib.h", "lualib.h"] {
        let path = Path::new("/usr/include/lua5.4").join(header);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (scripts/install-deps.sh installs liblua5.4-dev)",
                path.display()
            )
        });
        let flat = text.replace('\n', " ");
        for declaration in flat.split(';') {
            let Some(at) = ["LUA_API", "LUALIB_API", "LUAMOD_API"]
                .iter()
                .filter_map(|api| declaration.find(api))
                .min()
            else {
                continue;
            };
            // The declared name is the first identifier in parentheses (Lua writes
            // `LUA_API int (lua_gettop) (lua_State *L)`).
            let name = declaration[at..]
                .split('(')
                .filter_map(|piece| piece.split_once(')').map(|(inside, _)| inside.trim()))
                .find(|word| {
                    (word.starts_with("lua_")
                        || word.starts_with("luaL_")
                        || word.starts_with("luaopen_"))
                        && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                });
            if let Some(name) = name {
                names.push(name.to_owned());
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

#[test]
fn every_lua_api_function_is_exported() {
    let declared = declared_api();
    assert!(
        declared.len() > 140,
        "too few declarations found: {declared:?}"
    );
    for name in [
        "lua_gettop",
        "luaL_setfuncs",
        "luaL_checkversion_",
        "luaopen_base",
    ] {
        assert!(
            declared.iter().any(|d| d == name),
            "{name} not found in the headers"
        );
    }
    let output = Command::new("nm")
        .args(["-D", "--defined-only", env!("CARGO_BIN_EXE_lutra")])
        .output()
        .expect("nm (binutils) runs");
    assert!(output.status.success(), "nm failed");
    let table = String::from_utf8_lossy(&output.stdout);
    let exported: std::collections::HashSet<&str> = table
        .lines()
        .filter_map(|line| line.split_whitespace().nth(2))
        .collect();
    let missing: Vec<&String> = declared
        .iter()
        .filter(|name| !exported.contains(name.as_str()))
        .collect();
    assert!(missing.is_empty(), "not exported by lutra: {missing:?}");
}

/// Copies the files of `from` into `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn a_rock_built_offline_loads_from_the_default_cpath() {
    let script = common::ScriptFile::new(
        "c-rock",
        "use_rock.lua",
        r#"
        local p = lutra.spawn(function()
          local tinyrock = require "tinyrock"
          return tinyrock.add(40, 2), tinyrock.upper("rock"), package.searchpath("tinyrock", package.cpath)
        end)
        local sum, upper, where = p:join()
        assert(sum == 42 and upper == "ROCK", tostring(sum))
        assert(where:find("/.luarocks/lib/lua/5.4/tinyrock.so", 1, true), where)
        print("ok")
        "#,
    );
    let home = script.path().parent().unwrap().join("home");
    let source = home.join("src");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/rock-c"),
        &source,
    );
    let built = Command::new("luarocks")
        .args([
            "--lua-version",
            "5.4",
            "make",
            "--local",
            "tinyrock-scm-1.rockspec",
        ])
        .current_dir(&source)
        .env("HOME", &home)
        .output()
        .expect("luarocks runs (scripts/install-deps.sh installs it)");
    assert!(
        built.status.success(),
        "luarocks make failed:\n{}{}",
        String::from_utf8_lossy(&built.stdout),
        String::from_utf8_lossy(&built.stderr)
    );
    let output = Command::new(env!("CARGO_BIN_EXE_lutra"))
        .arg(script.path())
        .env("HOME", &home)
        .env_remove("LUA_CPATH")
        .env_remove("LUA_CPATH_5_4")
        .output()
        .expect("lutra starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("ok"),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
