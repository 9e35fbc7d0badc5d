//! `lutra` reads its command line as `lua5.4` does: each case runs under both (in the
//! same directory, with the same environment and standard input) and compares
//! standard output, the exit status and the first line of standard error (the
//! program's name aside). Usage errors exit 64 under `lutra` where lua5.4 exits 1.
//! The interactive prompt is driven through a pseudo-terminal (`script`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A directory with a few scripts, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("lutra-like-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files: [(&str, &[u8]); 7] = [
            (
                "s.lua",
                b"print('script', ...)\nprint(arg[-1], arg[0], arg[1], #arg)\n",
            ),
            (
                "fails.lua",
                b"local x = nil\nprint('before')\nerror('boom')\n",
            ),
            ("syntax.lua", b"print('never')\nx = = 1\n"),
            ("-", b"print('a file named -', ...)\n"),
            ("init.lua", b"print('init file')\n"),
            ("mm.lua", b"return { x = 5 }\n"),
            (
                "shebang.lua",
                b"#!/usr/bin/env lutra\nprint(debug.getinfo(1).currentline)\n",
            ),
        ];
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        std::fs::write(dir.join("bom.lua"), b"\xEF\xBB\xBFprint('bom')\n").unwrap();
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Run {
    status: i32,
    stdout: String,
    stderr: String,
}

fn run(program: &str, args: &[&str], env: &[(&str, &str)], stdin: &str, dir: &Path) -> Run {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for name in [
        "LUA_INIT",
        "LUA_INIT_5_4",
        "LUA_PATH",
        "LUA_PATH_5_4",
        "LUA_CPATH",
        "LUA_CPATH_5_4",
    ] {
        command.env_remove(name);
    }
    // Without HOME, lutra's default paths are exactly Debian's (no LuaRocks user tree).
    command.env_remove("HOME");
    command.envs(env.iter().copied());
    let mut child = command.spawn().unwrap_or_else(|e| {
        panic!("{program} starts ({e}; scripts/install-deps.sh installs lua5.4)")
    });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    // argv[0] differs (lua5.4 / the test's path of lutra): it is shown as PROG.
    let normalise = |bytes: &[u8]| String::from_utf8_lossy(bytes).replace(program, "PROG");
    Run {
        status: output.status.code().unwrap_or(-1),
        stdout: normalise(&output.stdout),
        stderr: normalise(&output.stderr),
    }
}

/// The first line of standard error without the program's name.
fn first_error_line(run: &Run) -> String {
    let line = run.stderr.lines().next().unwrap_or("").to_owned();
    line.strip_prefix("PROG: ")
        .or_else(|| line.strip_prefix("lua5.4: "))
        .or_else(|| line.strip_prefix("lutra: "))
        .unwrap_or(&line)
        .to_owned()
}

/// `Lua 5.4.N  Copyright (C) 1994-YYYY` with the release and year removed.
fn without_release(text: &str) -> String {
    text.lines()
        .map(|line| match line.strip_prefix("Lua 5.4.") {
            Some(_) if line.contains("Copyright (C) 1994-") => "Lua 5.4.x  Copyright".to_owned(),
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn compare(dir: &Path, args: &[&str], env: &[(&str, &str)], stdin: &str) {
    let lua = run("lua5.4", args, env, stdin, dir);
    let lutra = run(env!("CARGO_BIN_EXE_lutra"), args, env, stdin, dir);
    let case = format!("{args:?} env {env:?} stdin {stdin:?}");
    let usage_error = lua.stderr.contains("usage: ");
    let expected_status = if usage_error { 64 } else { lua.status };
    assert_eq!(
        lutra.status, expected_status,
        "{case}: exit status\nlua5.4 stderr: {}\nlutra stderr: {}",
        lua.stderr, lutra.stderr
    );
    assert_eq!(
        without_release(&lutra.stdout),
        without_release(&lua.stdout),
        "{case}: stdout"
    );
    assert_eq!(
        first_error_line(&lutra),
        first_error_line(&lua),
        "{case}: stderr\n{}",
        lutra.stderr
    );
}

#[test]
fn every_lua54_flag_behaves_as_under_lua54() {
    let scratch = Scratch::new("flags");
    let dir = &scratch.0;
    let none: &[(&str, &str)] = &[];
    // Everything after the script is the script's.
    compare(dir, &["s.lua", "-w", "3", "--help", "x"], none, "");
    compare(dir, &["s.lua"], none, "");
    // -e, in order, with `arg` laid out around the (absent) script.
    compare(
        dir,
        &[
            "-e",
            "print(1)",
            "-e",
            "x = 2",
            "-eprint(x, arg[0], arg[1], arg[2], #arg)",
        ],
        none,
        "",
    );
    compare(
        dir,
        &["-e", "print(arg[-2], arg[-1], arg[0], ...)", "s.lua", "a"],
        none,
        "",
    );
    compare(dir, &["-e", "error('raised')"], none, "");
    compare(dir, &["-e", "x = = 1"], none, "");
    compare(dir, &["-e"], none, "");
    // -l mod and -l g=mod, from the package path.
    compare(dir, &["-l", "mm", "-e", "print(mm.x)"], none, "");
    compare(dir, &["-lg=mm", "-e", "print(g.x, mm)"], none, "");
    compare(
        dir,
        &[
            "-l",
            "lpeg",
            "-e",
            "print(lpeg.match(lpeg.R('az')^1, 'abc1'))",
        ],
        none,
        "",
    );
    compare(dir, &["-l", "nosuchmodule"], none, "");
    // -v, -i's banner, -W.
    compare(dir, &["-v"], none, "");
    compare(dir, &["-v", "-e", "print('after')"], none, "");
    compare(
        dir,
        &[
            "-W",
            "-e",
            "warn('a', 'b')",
            "-e",
            "warn('@off')",
            "-e",
            "warn('hidden')",
        ],
        none,
        "",
    );
    compare(dir, &["-e", "warn('off by default')"], none, "");
    // -E: no LUA_INIT, default paths whatever the environment says.
    let env = [
        ("LUA_INIT", "print('init')"),
        ("LUA_PATH", "/x/?.lua"),
        ("LUA_CPATH", "/y/?.so"),
    ];
    compare(
        dir,
        &["-E", "-e", "print(package.path) print(package.cpath)"],
        &env,
        "",
    );
    compare(
        dir,
        &["-e", "print(package.path) print(package.cpath)"],
        &env,
        "",
    );
    // LUA_INIT: code, @file, the versioned name first; ";;" in the path variables.
    compare(
        dir,
        &["-e", "print('e')"],
        &[("LUA_INIT", "print('init code')")],
        "",
    );
    compare(dir, &["-e", ""], &[("LUA_INIT", "@init.lua")], "");
    compare(dir, &["-e", ""], &[("LUA_INIT", "@nofile.lua")], "");
    compare(dir, &["-e", ""], &[("LUA_INIT", "x =")], "");
    compare(
        dir,
        &["-e", ""],
        &[
            ("LUA_INIT_5_4", "print('5.4')"),
            ("LUA_INIT", "print('any')"),
        ],
        "",
    );
    let env = [
        ("LUA_PATH_5_4", "/a/?.lua;;/b/?.lua"),
        ("LUA_CPATH", ";;/c/?.so"),
    ];
    compare(
        dir,
        &["-e", "print(package.path) print(package.cpath)"],
        &env,
        "",
    );
    // - and --.
    compare(dir, &["-", "a", "b"], none, "print('stdin', ...)");
    compare(dir, &["--", "s.lua", "-v"], none, "");
    compare(dir, &["--", "-", "x"], none, "");
    compare(dir, &["-e", "print(1)", "--"], none, "");
    // No script: standard input (not a terminal) runs as a script.
    compare(dir, &[], none, "print('from stdin', ...)\nprint(arg[0])");
    compare(dir, &[], none, "print(1 +)");
    // -i with standard input not a terminal: the banner, prompts and the value.
    // (lua5.4's line editor echoes the lines there; `tests::prompt...` drives a
    // terminal instead.)
    // Errors and odd files.
    compare(dir, &["fails.lua"], none, "");
    compare(dir, &["syntax.lua"], none, "");
    compare(dir, &["nofile.lua"], none, "");
    compare(dir, &["-x"], none, "");
    compare(dir, &["-iv"], none, "");
    compare(dir, &["shebang.lua"], none, "");
    compare(dir, &["bom.lua"], none, "");
    compare(dir, &["/dev/zero"], none, "");
    compare(dir, &["."], none, "");
}

/// Feeds `input` to `program` on a pseudo-terminal (util-linux `script`) and answers
/// everything it printed.
fn on_terminal(program: &str, input: &str) -> String {
    let mut child = Command::new("script")
        .args(["-qec", program, "/dev/null"])
        .env_remove("LUA_INIT")
        .env_remove("LUA_INIT_5_4")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script (util-linux) starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&output.stdout).replace('\r', "")
}

#[test]
fn without_a_script_a_terminal_gets_the_prompt() {
    let input = "x = 21\n=x * 2\nx * 3\nfor i = 1, 2 do\nprint('line', i)\nend\n\
                 ch = lutra.channel()\n\
                 p = lutra.spawn(function(c) c:send('from a process') end, ch)\n\
                 =ch:receive()\n\
                 s = lutra.shared { n = 0 }\n\
                 lutra.atomic(function() s.n = s.n + 1 end)\n\
                 =s.n\n\
                 error('oops')\n\
                 print(1 +\n";
    let lutra = on_terminal(&format!("{} -w 1", env!("CARGO_BIN_EXE_lutra")), input);
    for expected in [
        "Lua 5.4.",
        "> ",
        "42\n",
        "63\n",
        ">> ",
        "line\t1\nline\t2\n",
        "from a process\n",
        "1\n",
        "stdin:1: oops",
    ] {
        assert!(
            lutra.contains(expected),
            "the prompt lacks {expected:?}:\n{lutra}"
        );
    }
    // The same statements (without lutra's) show the same values under lua5.4.
    let plain = "x = 21\n=x * 2\nx * 3\nfor i = 1, 2 do\nprint('line', i)\nend\nerror('oops')\n";
    let lua = on_terminal("lua5.4", plain);
    let lutra = on_terminal(env!("CARGO_BIN_EXE_lutra"), plain);
    for expected in ["42\n", "63\n", "line\t1\nline\t2\n", "stdin:1: oops"] {
        assert!(lua.contains(expected), "lua5.4 lacks {expected:?}:\n{lua}");
        assert!(
            lutra.contains(expected),
            "lutra lacks {expected:?}:\n{lutra}"
        );
    }
}
