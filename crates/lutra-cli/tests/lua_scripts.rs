//! Runs every Lua test script under `tests/lua/` with the `lutra` program.
//!
//! A script passes when `lutra` exits 0, unless its first lines declare otherwise:
//! - `-- expect-exit: N` — the exit status to expect;
//! - `-- expect-stderr: text` — text standard error must contain (repeatable);
//! - `-- expect-stdout: text` — text standard output must contain (repeatable);
//! - `-- expect-no-stderr: text` — text standard error must not contain (repeatable);
//! - `-- lutra-args: ...` — options given to `lutra` before the script (e.g. `-w 1`);
//! - `-- lutra-env: NAME=VALUE` — an environment variable set for `lutra` (repeatable).
//!
//! Scripts use `assert`; a failed assertion is an uncaught error (exit 1).
//!
//! A script that has not ended after [`DEADLINE`] is killed and reported by name with
//! the output it printed, so a hang fails this test instead of stalling the run.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use wait_timeout::ChildExt;

/// How long one script may run. The slowest script takes a few seconds on a quiet
/// machine and about ten times that on a loaded one; a script still running after this
/// is hung.
const DEADLINE: Duration = Duration::from_secs(180);

struct Expectations {
    exit: i32,
    stderr: Vec<String>,
    stdout: Vec<String>,
    not_stderr: Vec<String>,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

fn expectations(source: &str) -> Expectations {
    let mut expected = Expectations {
        exit: 0,
        stderr: Vec::new(),
        stdout: Vec::new(),
        not_stderr: Vec::new(),
        args: Vec::new(),
        env: Vec::new(),
    };
    for line in source.lines().take_while(|line| line.starts_with("--")) {
        let line = line.trim_start_matches("--").trim();
        if let Some(code) = line.strip_prefix("expect-exit:") {
            expected.exit = code.trim().parse().expect("expect-exit takes a number");
        } else if let Some(text) = line.strip_prefix("expect-stderr:") {
            expected.stderr.push(text.trim().to_owned());
        } else if let Some(text) = line.strip_prefix("expect-stdout:") {
            expected.stdout.push(text.trim().to_owned());
        } else if let Some(text) = line.strip_prefix("expect-no-stderr:") {
            expected.not_stderr.push(text.trim().to_owned());
        } else if let Some(args) = line.strip_prefix("lutra-args:") {
            expected.args = args.split_whitespace().map(str::to_owned).collect();
        } else if let Some(var) = line.strip_prefix("lutra-env:") {
            let (name, value) = var
                .trim()
                .split_once('=')
                .expect("lutra-env takes NAME=VALUE");
            expected.env.push((name.to_owned(), value.to_owned()));
        }
    }
    expected
}

fn scripts() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lua");
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "lua"))
        .collect();
    scripts.sort();
    scripts
}

fn run(script: &Path) -> Result<(), String> {
    let source = std::fs::read_to_string(script).map_err(|e| e.to_string())?;
    let expected = expectations(&source);
    let output = run_with_deadline(
        Command::new(env!("CARGO_BIN_EXE_lutra"))
            .args(&expected.args)
            .envs(expected.env.iter().map(|(name, value)| (name, value)))
            .arg(script.file_name().expect("a script has a file name"))
            .current_dir(script.parent().expect("scripts live in a directory"))
            // As a shell sets it: the directory lutra runs in.
            .env("PWD", script.parent().expect("scripts live in a directory")),
    )
    .map_err(|e| format!("{}: cannot run lutra: {e}", script.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let status = output.status.and_then(|status| status.code()).unwrap_or(-1);
    let mut problems = Vec::new();
    if output.status.is_none() {
        problems.push(format!("still running after {DEADLINE:?}: killed"));
    } else if status != expected.exit {
        problems.push(format!("exit status {status}, expected {}", expected.exit));
    }
    for text in &expected.stderr {
        if !stderr.contains(text.as_str()) {
            problems.push(format!("stderr lacks {text:?}"));
        }
    }
    for text in &expected.stdout {
        if !stdout.contains(text.as_str()) {
            problems.push(format!("stdout lacks {text:?}"));
        }
    }
    for text in &expected.not_stderr {
        if stderr.contains(text.as_str()) {
            problems.push(format!("stderr contains {text:?}"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}\n--- stdout\n{stdout}--- stderr\n{stderr}",
            script.display(),
            problems.join("; ")
        ))
    }
}

/// What a script printed and how it ended (`None`: killed at the deadline).
struct Outcome {
    status: Option<std::process::ExitStatus>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Runs `command` to its end or to [`DEADLINE`], whichever comes first, collecting
/// its output on two threads (a full pipe would otherwise stop the child). The child
/// leads its own process group, so a kill reaches what it started.
fn run_with_deadline(command: &mut Command) -> std::io::Result<Outcome> {
    let mut child = command
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let collect = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            // A read error ends the collection; what was read is kept.
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = collect(Box::new(child.stdout.take().expect("stdout is piped")));
    let stderr = collect(Box::new(child.stderr.take().expect("stderr is piped")));
    let status = child.wait_timeout(DEADLINE)?;
    if status.is_none() {
        // The whole group: children the script started would hold the pipes open.
        Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .status()?;
        child.wait()?;
    }
    let outcome = Outcome {
        status,
        stdout: stdout.join().expect("the stdout collector does not panic"),
        stderr: stderr.join().expect("the stderr collector does not panic"),
    };
    Ok(outcome)
}

#[test]
fn every_lua_script_passes() {
    let scripts = scripts();
    assert!(!scripts.is_empty(), "no Lua test scripts found");
    let failures: Vec<String> = scripts.iter().filter_map(|s| run(s).err()).collect();
    println!("{} Lua scripts, {} failed", scripts.len(), failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
