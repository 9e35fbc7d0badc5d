//! The `lutra` program's command line: usage errors exit with 64 (EX_USAGE), never
//! with a deadlock's 2; worker counts it cannot start are refused
//! with a message (item 5); `--help` documents the exit statuses.

use std::process::{Command, Output};

fn lutra(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lutra"))
        .args(args)
        .output()
        .expect("lutra starts")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn usage_errors_exit_with_64() {
    for args in [
        &["--no-such-option", "s.lua"][..],
        &["-e"][..],
        &["-x", "s.lua"][..],
        &["--policy", "fifo", "s.lua"][..],
        &["--memory-limit", "lots", "s.lua"][..],
        &["--preempt", "-1", "s.lua"][..],
        &["--mailbox-cap", "many", "s.lua"][..],
    ] {
        let output = lutra(args);
        assert_eq!(
            output.status.code(),
            Some(64),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(!stderr(&output).is_empty(), "{args:?}: no message");
    }
}

#[test]
fn worker_counts_that_cannot_start_are_refused() {
    for (count, reason) in [
        ("65535", "at most 1024"),
        ("1025", "at most 1024"),
        ("0", "at least 1"),
        ("-3", "not a worker count"),
        ("abc", "not a worker count"),
    ] {
        let output = lutra(&["-w", count, "s.lua"]);
        assert_eq!(output.status.code(), Some(64), "-w {count}");
        assert!(
            stderr(&output).contains(reason),
            "-w {count}: {}",
            stderr(&output)
        );
    }
}

#[test]
fn help_documents_the_exit_statuses() {
    let output = lutra(&["--help"]);
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8_lossy(&output.stdout);
    for needle in ["Exit status", "deadlock", "64", "usage error", "os.exit"] {
        assert!(text.contains(needle), "--help lacks {needle:?}:\n{text}");
    }
    assert_eq!(lutra(&["--version"]).status.code(), Some(0));
}

#[test]
fn a_missing_script_is_not_a_usage_error() {
    let output = lutra(&["/nonexistent/script.lua"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("cannot open /nonexistent/script.lua"));
}
