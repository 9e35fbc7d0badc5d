//! Blocking calls that must wait, driven by a handshake instead of a sleep: the main
//! process blocks (in `select`, `try_receive` with a timeout, `retry`) and a helper
//! process it spawned waits for a go-ahead on the named channel `go`; the test sends
//! the go-ahead (from a second script) only once the main process provably waits
//! (`ProcessCore::waiting_on` reports what it is blocked on). Each script asserts
//! what the woken call returned, and how many times a retried transaction ran.

use lutra_lua::{LuaRuntime, Options, Outcome, SyncMode, WaitOutcome};
use std::time::{Duration, Instant};

/// Runs `main` (which must create the named channel `go` before its helper waits on
/// it), waits until it blocks, lets the helper go, and returns how `main` ended.
fn after_main_blocks(sync: SyncMode, main: &str) -> Outcome {
    let runtime = LuaRuntime::new(Options {
        workers: Some(2),
        sync,
        ..Options::default()
    });
    let process = runtime.spawn_source("=main", main);
    let deadline = Instant::now() + Duration::from_secs(60);
    while process.waiting_on().is_none() {
        assert!(
            matches!(process.outcome(), Outcome::Running),
            "under {sync:?} main ended without blocking: {:?}",
            process.outcome()
        );
        assert!(
            Instant::now() < deadline,
            "under {sync:?} main never blocked"
        );
        std::thread::yield_now();
    }
    runtime.spawn_source("=go", "require('luaproc').send('go', true)");
    assert_eq!(runtime.wait(), WaitOutcome::AllFinished, "under {sync:?}");
    process.outcome()
}

fn check(main: &str) {
    for sync in [SyncMode::Locks, SyncMode::Tm] {
        match after_main_blocks(sync, main) {
            Outcome::Finished(_) => {}
            other => panic!("under {sync:?} the script failed: {other:?}"),
        }
    }
}

/// The helper: waits for the go-ahead, then runs `then` with the argument `x`.
const HELPER: &str = r#"
require("luaproc").newchannel("go")
local function helper(then_, x)
  lutra.spawn(function(then_, x)
    require("luaproc").receive("go")
    load(then_)(x)
  end, then_, x)
end
"#;

#[test]
fn select_blocks_until_a_channel_is_ready() {
    check(&format!(
        r#"{HELPER}
local a, b = lutra.channel(4), lutra.channel(4)
helper("local a = ... a:send('late')", a)
local ch, v = lutra.select(a, b)
assert(ch == a and v == "late", tostring(v))
"#
    ));
}

#[test]
fn a_blocked_select_wakes_when_its_last_channel_closes() {
    check(&format!(
        r#"{HELPER}
local d = lutra.channel()
helper("local d = ... d:close()", d)
local ok, err = pcall(lutra.select, d)
assert(ok == false and err:find("closed"), tostring(err))
"#
    ));
}

#[test]
fn try_receive_takes_a_message_that_arrives_during_its_wait() {
    check(&format!(
        r#"{HELPER}
local ch = lutra.channel(4)
helper("local ch = ... ch:send('late')", ch)
local ok, v = ch:try_receive(1e300)
assert(ok == true and v == "late", tostring(v))
"#
    ));
}

#[test]
fn try_receive_answers_closed_when_the_channel_closes_during_its_wait() {
    check(&format!(
        r#"{HELPER}
local c = lutra.channel()
helper("local c = ... c:close()", c)
local ok, why = c:try_receive(1e300)
assert(ok == false and why == "closed", tostring(why))
"#
    ));
}

#[test]
fn retry_parks_until_another_process_commits() {
    check(&format!(
        r#"{HELPER}
local flag = lutra.shared({{ ready = false }})
helper("local flag = ... lutra.atomic(function() flag.value = 'hello'; flag.ready = true end)", flag)
local runs = 0
local value = lutra.atomic(function()
  runs = runs + 1
  if not flag.ready then lutra.retry() end
  return flag.value
end)
assert(value == "hello", tostring(value))
-- Parked once, woken once by the commit: the closure ran twice (a busy wait runs it
-- again and again).
assert(runs == 2, "the retried transaction ran " .. runs .. " times")
"#
    ));
}

#[test]
fn try_receive_takes_from_a_waiting_rendezvous_sender() {
    check(&format!(
        r#"{HELPER}
local r = lutra.channel()
helper("local r = ... local ok, v = r:try_receive() assert(ok == true and v == 'waiting', tostring(v))", r)
-- Blocks until the helper's try_receive (which must not wait) takes the message.
r:send("waiting")
"#
    ));
}
