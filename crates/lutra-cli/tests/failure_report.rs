//! A process whose body fails has its error reported at once, as luaproc does,
//! not when the program ends: the script below lets a process
//! fail, waits for it to finish, then blocks reading standard input; the test reads
//! standard error until the report appears, and only then closes standard input so
//! that the program can end. With the report printed only at exit, the program
//! would never end (the test's time limit fails it).

mod common;

use common::ScriptFile;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const SCRIPT: &str = r#"
lutra.spawn(function() error("boom at once") end)
lutra.wait()
io.read()
print("stdin closed")
"#;

#[test]
fn a_failing_process_is_reported_before_the_program_ends() {
    let script = ScriptFile::new("failure-report", "fails.lua", SCRIPT);
    let mut child = Command::new(env!("CARGO_BIN_EXE_lutra"))
        .arg(script.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lutra starts");
    let stderr = child.stderr.take().unwrap();
    let (seen, reported) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("boom at once") {
                let _ = seen.send(line);
            }
        }
    });
    // A limit for the failure case only: the report comes while the program still
    // runs (it waits for standard input), however slow the machine.
    let line = reported
        .recv_timeout(Duration::from_secs(120))
        .expect("the failure is reported while the program still runs");
    assert!(line.starts_with("lutra: process#"), "{line}");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"\n").unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1), "an unjoined failure exits 1");
    assert!(String::from_utf8_lossy(&output.stdout).contains("stdin closed"));
    assert!(
        reported.recv_timeout(Duration::from_secs(5)).is_err(),
        "the failure is reported once, not again at exit"
    );
}
