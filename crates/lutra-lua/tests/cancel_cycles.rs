//! Spawn, cancel and join 100,000 times: nothing is left behind. Counted, not
//! guessed: the process records alive in the OS process (`ProcessCore::records_alive`,
//! which also holds each record's mailbox and the messages queued in it) come back
//! to what the script holds, and the resident memory after the second half of the
//! cycles is within a bound of what it was after the first half (flat).
//!
//! Each cycle cancels the child in one of four ways: before its first slice (it
//! never runs), blocked in a receive with a message left unread in its mailbox,
//! after a yield of the spawner (wherever the child is then), and monitored (the
//! notice is received).

use lutra_lua::{LuaRuntime, Options, Outcome, ProcessCore, WaitOutcome};
use std::time::{Duration, Instant};

/// Half of the cycles; the test runs two halves, noting the resident memory after
/// each.
const HALF: u32 = 50_000;

const SCRIPT: &str = r#"
local n = ...
local ch = lutra.channel()
for i = 1, n do
  local p = lutra.spawn(function(ch) ch:receive() end, ch)
  local kind = i % 4
  if kind == 1 then lutra.monitor(p) end
  if kind == 2 then p:send("never received", i) end
  if kind == 3 then lutra.yield() end
  assert(p:cancel("cycle"))
  local ok, err = p:join()
  assert(ok == false and err == "cancelled: cycle", tostring(err))
  if kind == 1 then assert(lutra.receive()[3] == "cancelled") end
end
"#;

/// The resident set of this OS process, in bytes (Linux `/proc/self/statm`).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|field| field.parse().ok())
        .expect("statm's second field");
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    pages * page
}

/// Runs `HALF` cycles as a script of its own; answers the resident memory after.
fn half(runtime: &LuaRuntime, before: usize) -> u64 {
    let main = runtime.spawn_script(
        "=cancel_cycles",
        SCRIPT.as_bytes().to_vec(),
        vec![HALF.to_string()],
    );
    assert_eq!(runtime.wait(), WaitOutcome::AllFinished);
    match main.outcome() {
        Outcome::Finished(_) => {}
        other => panic!("the cycles did not finish: {other:?}"),
    }
    drop(main);
    // The main script's task record (which holds its process record) is dropped by
    // its worker just after the script is counted finished: wait for the count.
    let deadline = Instant::now() + Duration::from_secs(10);
    while ProcessCore::records_alive() > before && Instant::now() < deadline {
        std::thread::yield_now();
    }
    let records = ProcessCore::records_alive() - before;
    assert_eq!(records, 0, "process records alive after {HALF} cycles");
    resident_bytes()
}

/// How much the resident memory may grow over the second half (the allocator keeps
/// what it freed; a leak of one record's size per cycle is 10 MB or more).
const RESIDENT_SLACK: u64 = 4 << 20;

#[test]
fn spawn_cancel_join_cycles_leave_nothing_behind() {
    let before = ProcessCore::records_alive();
    let runtime = LuaRuntime::new(Options {
        workers: Some(2),
        ..Options::default()
    });
    let first = half(&runtime, before);
    let second = half(&runtime, before);
    eprintln!(
        "resident memory after {HALF} cycles: {first} bytes; after {}: {second} bytes",
        2 * HALF
    );
    assert!(
        second <= first + RESIDENT_SLACK,
        "resident memory grew from {first} to {second} bytes over {HALF} cycles"
    );
}
