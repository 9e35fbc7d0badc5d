//! A script is read as the parser takes it (a reader, block by block), never whole
//! first: a file without end (/dev/zero) or that is not Lua text (a program binary)
//! fails at its first bad token with the parser's message and exit status 1, as
//! under lua5.4, after reading one block. Endless valid text is parsed as it comes,
//! as lua5.4 parses it, and stops at the process's memory limit.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `lutra args`, killing it if it has not finished within `limit` (a guard
/// against reading without end, not a measure of speed). Answers the exit status and
/// standard error, or None when it had to be killed.
fn run_guarded(args: &[&str], limit: Duration) -> Option<(i32, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lutra"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lutra starts");
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
            return Some((status.code().unwrap_or(-1), stderr));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_endless_file_fails_at_its_first_bad_token() {
    let (status, stderr) = run_guarded(&["/dev/zero"], Duration::from_secs(60))
        .expect("lutra /dev/zero read without end");
    assert_eq!(status, 1, "{stderr}");
    assert!(
        stderr.contains("/dev/zero:1: unexpected symbol"),
        "{stderr}"
    );
}

#[test]
fn a_binary_fails_with_the_parsers_message() {
    let binary = env!("CARGO_BIN_EXE_lutra");
    let (status, stderr) = run_guarded(&[binary], Duration::from_secs(60)).expect("lutra finishes");
    assert_eq!(status, 1, "{stderr}");
    assert!(
        stderr.contains(":1: unexpected symbol near '<\\127>'"),
        "{stderr}"
    );
}

#[test]
fn a_directory_cannot_be_read() {
    let (status, stderr) = run_guarded(&["/"], Duration::from_secs(60)).expect("lutra finishes");
    assert_eq!(status, 1, "{stderr}");
    assert!(stderr.contains("cannot read /: Is a directory"), "{stderr}");
}

#[test]
fn endless_valid_text_stops_at_the_memory_limit() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lutra"))
        .args(["--memory-limit", "8M", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lutra starts");
    let mut stdin = child.stdin.take().unwrap();
    // Writes statements until lutra stops reading (the pipe breaks).
    let writer = std::thread::spawn(move || {
        let block = "x = 1\n".repeat(4096);
        while std::io::Write::write_all(&mut stdin, block.as_bytes()).is_ok() {}
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not enough memory"), "{stderr}");
}
