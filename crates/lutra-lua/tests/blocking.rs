//! Blocking calls that must wait, driven by a handshake instead of a sleep: the main
//! process blocks (a rendezvous or over-capacity `send`, `select`, `try_receive` with a
//! timeout, `retry`, also inside `or_else` and `pcall`) and a helper process it spawned
//! waits for a go-ahead on the named channel `go`; the test sends the go-ahead (from a
//! second script) only once the main process provably waits on the expected call
//! (`ProcessCore::waiting_on` names what it is blocked on). Each script then asserts
//! what the woken call returned, and how many times a retried transaction ran. A call
//! that does not wait fails the handshake; one that is not woken ends in a deadlock
//! report.

use lutra_lua::{LuaRuntime, Options, Outcome, SyncMode, WaitOutcome};
use std::time::{Duration, Instant};

/// Runs `main` (which must create the named channel `go` before its helper waits on
/// it), waits until it blocks on something whose description contains `waits_on`,
/// lets the helper go, and returns how `main` ended.
fn after_main_blocks(sync: SyncMode, main: &str, waits_on: &str) -> Outcome {
    let runtime = LuaRuntime::new(Options {
        workers: Some(2),
        sync,
        // Small, so that a third message to a process waits (`lutra --mailbox-cap 2`).
        mailbox_capacity: MAILBOX_CAPACITY,
        ..Options::default()
    });
    let process = runtime.spawn_source("=main", main);
    let deadline = Instant::now() + Duration::from_secs(60);
    let blocked_on = loop {
        if let Some(what) = process.waiting_on() {
            break what;
        }
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
    };
    assert!(
        blocked_on.contains(waits_on),
        "under {sync:?} main blocked on {blocked_on}, not {waits_on}"
    );
    runtime.spawn_source("=go", "require('luaproc').send('go', true)");
    assert_eq!(runtime.wait(), WaitOutcome::AllFinished, "under {sync:?}");
    process.outcome()
}

fn check(waits_on: &str, main: &str) {
    for sync in [SyncMode::Locks, SyncMode::Tm] {
        match after_main_blocks(sync, main, waits_on) {
            Outcome::Finished(_) => {}
            other => panic!("under {sync:?} the script failed: {other:?}"),
        }
    }
}

/// Mailbox capacity of the runtimes here.
const MAILBOX_CAPACITY: usize = 2;

/// The helper: waits for the go-ahead, then runs `then` with the argument `x`;
/// returns the helper process.
const HELPER: &str = r#"
require("luaproc").newchannel("go")
local function helper(then_, x)
  return lutra.spawn(function(then_, x)
    require("luaproc").receive("go")
    return load(then_)(x)
  end, then_, x)
end
"#;

#[test]
fn select_blocks_until_a_channel_is_ready() {
    check(
        "select",
        &format!(
            r#"{HELPER}
local a, b = lutra.channel(4), lutra.channel(4)
helper("local a = ... a:send('late')", a)
local ch, v = lutra.select(a, b)
assert(ch == a and v == "late", tostring(v))
"#
        ),
    );
}

#[test]
fn a_blocked_select_wakes_when_its_last_channel_closes() {
    check(
        "select",
        &format!(
            r#"{HELPER}
local d = lutra.channel()
helper("local d = ... d:close()", d)
local ok, err = pcall(lutra.select, d)
assert(ok == false and err:find("closed"), tostring(err))
"#
        ),
    );
}

#[test]
fn try_receive_takes_a_message_that_arrives_during_its_wait() {
    check(
        "receive",
        &format!(
            r#"{HELPER}
local ch = lutra.channel(4)
helper("local ch = ... ch:send('late')", ch)
local ok, v = ch:try_receive(1e300)
assert(ok == true and v == "late", tostring(v))
"#
        ),
    );
}

#[test]
fn try_receive_answers_closed_when_the_channel_closes_during_its_wait() {
    check(
        "receive",
        &format!(
            r#"{HELPER}
local c = lutra.channel()
helper("local c = ... c:close()", c)
local ok, why = c:try_receive(1e300)
assert(ok == false and why == "closed", tostring(why))
"#
        ),
    );
}

#[test]
fn retry_parks_until_another_process_commits() {
    check(
        "retry",
        &format!(
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
        ),
    );
}

#[test]
fn try_receive_takes_from_a_waiting_rendezvous_sender() {
    check(
        "send",
        &format!(
            r#"{HELPER}
local r = lutra.channel()
helper("local r = ... local ok, v = r:try_receive() assert(ok == true and v == 'waiting', tostring(v))", r)
-- Blocks until the helper's try_receive (which must not wait) takes the message.
r:send("waiting")
"#
        ),
    );
}

#[test]
fn a_rendezvous_send_waits_for_its_receiver() {
    check(
        "send",
        &format!(
            r#"{HELPER}
local ch = lutra.channel()
local log = lutra.channel(4)
helper([[
  local t = ...
  local ch, log = t[1], t[2]
  local x, n, none, f = ch:receive()
  assert(x == "a" and n == 1 and none == nil and f == 2.5)
  assert(math.type(n) == "integer" and math.type(f) == "float")
  log:send("received")
]], {{ ch, log }})
ch:send("a", 1, nil, 2.5)
-- The send returned once the helper (which starts only once this process waits)
-- took the message.
assert(log:receive() == "received")
"#
        ),
    );
}

#[test]
fn a_send_beyond_the_capacity_waits_for_a_receive() {
    check(
        "send",
        &format!(
            r#"{HELPER}
local ch = lutra.channel(3)
for i = 1, 3 do ch:send(i) end
helper("local ch = ... assert(ch:receive() == 1)", ch)
ch:send(4)
for i = 2, 4 do assert(ch:receive() == i) end
"#
        ),
    );
}

#[test]
fn a_retried_transaction_reruns_its_local_effects_once_woken() {
    check(
        "retry",
        &format!(
            r#"{HELPER}
local s = lutra.shared({{ ready = false, done = 0 }})
helper("local s = ... s.ready = true", s)
local attempts, log = 0, {{}}
lutra.atomic(function()
  attempts = attempts + 1
  log[#log + 1] = "attempt " .. attempts
  if not s.ready then lutra.retry() end
  s.done = s.done + 1
end)
assert(attempts == 2, "the retried transaction ran " .. attempts .. " times")
assert(#log == attempts, "the local log grew on every attempt")
assert(s.done == 1, "the shared effect happened once")
"#
        ),
    );
}

#[test]
fn or_else_with_both_branches_retrying_wakes_on_the_first_branch_read() {
    check(
        "retry",
        &format!(
            r#"{HELPER}
local a, b = lutra.shared({{ n = 0 }}), lutra.shared({{ n = 0 }})
helper("local a = ... a.n = 1", a)
local got = lutra.or_else(function()
  if a.n == 0 then lutra.retry() end
  a.n = a.n - 1
  return "a"
end, function()
  if b.n == 0 then lutra.retry() end
  b.n = b.n - 1
  return "b"
end)
assert(got == "a" and a.n == 0, tostring(got))
"#
        ),
    );
}

#[test]
fn retry_inside_a_pcall_still_waits() {
    check(
        "retry",
        &format!(
            r#"{HELPER}
local flag = lutra.shared({{ go = false }})
helper("local flag = ... flag.go = true", flag)
local runs = 0
local went = lutra.atomic(function()
  runs = runs + 1
  pcall(function()
    if not flag.go then lutra.retry() end
  end)
  return "went"
end)
assert(went == "went" and runs == 2, tostring(went) .. " after " .. runs .. " runs")
"#
        ),
    );
}

#[test]
fn close_wakes_a_blocked_receiver_with_an_error() {
    check(
        "receive",
        &format!(
            r#"{HELPER}
local empty = lutra.channel()
helper("local c = ... c:close()", empty)
local ok, err = pcall(empty.receive, empty)
assert(ok == false and err:find("closed"), tostring(err))
"#
        ),
    );
}

#[test]
fn close_fails_a_blocked_rendezvous_send_without_delivering_it() {
    check(
        "send",
        &format!(
            r#"{HELPER}
local full = lutra.channel()
helper("local c = ... c:close()", full)
local ok, err = pcall(full.send, full, 1)
assert(ok == false and err:find("closed before the message was received", 1, true), tostring(err))
local got, why = full:try_receive()
assert(got == false and why == "closed", tostring(why))
"#
        ),
    );
}

#[test]
fn close_fails_a_waiting_buffered_send_and_keeps_the_earlier_one() {
    check(
        "send",
        &format!(
            r#"{HELPER}
local b = lutra.channel(1)
b:send("kept")
helper("local b = ... b:close()", b)
local sent, why = pcall(b.send, b, "dropped")
assert(sent == false and why:find("closed"), tostring(why))
assert(b:receive() == "kept")
assert(select(2, b:try_receive()) == "closed")
"#
        ),
    );
}

#[test]
fn delchannel_wakes_a_blocked_luaproc_receive() {
    check(
        "receive",
        &format!(
            r#"{HELPER}
local luaproc = require "luaproc"
assert(luaproc.newchannel("doomed"))
helper("assert(require('luaproc').delchannel('doomed'))")
local value, why = luaproc.receive("doomed")
assert(value == nil and why == "channel 'doomed' destroyed while waiting for sender", why)
"#
        ),
    );
}

#[test]
fn delchannel_wakes_a_blocked_luaproc_send() {
    check(
        "send",
        &format!(
            r#"{HELPER}
local luaproc = require "luaproc"
assert(luaproc.newchannel("doomed"))
helper("assert(require('luaproc').delchannel('doomed'))")
local value, why = luaproc.send("doomed", 1)
assert(value == nil and why == "channel 'doomed' destroyed while waiting for receiver", why)
"#
        ),
    );
}

#[test]
fn an_async_luaproc_receive_takes_a_waiting_sender() {
    check(
        "send",
        &format!(
            r#"{HELPER}
local luaproc = require "luaproc"
assert(luaproc.newchannel("c"))
helper([[
  local a, b, c, d = require("luaproc").receive("c", true)
  assert(a == "x" and b == 2 and c == true and d == nil, tostring(a))
]])
assert(luaproc.send("c", "x", 2, true, nil) == true)
"#
        ),
    );
}

#[test]
fn a_send_beyond_the_mailbox_capacity_waits_for_the_owner() {
    check(
        "send",
        &format!(
            r#"{HELPER}
local sink = helper([[
  local got = {{}}
  for i = 1, 3 do got[i] = lutra.receive() end
  return got[1], got[2], got[3]
]])
sink:send(1)
sink:send(2)
sink:send(3)
local a, b, c = sink:join()
assert(a == 1 and b == 2 and c == 3)
"#
        ),
    );
}

#[test]
fn a_send_blocked_on_a_full_mailbox_fails_when_its_owner_finishes() {
    check(
        "send",
        &format!(
            r#"{HELPER}
local quitter = helper("")
quitter:send(1)
quitter:send(2)
local ok, err = pcall(quitter.send, quitter, 3)
assert(ok == false and err:find("finished"), tostring(err))
"#
        ),
    );
}
