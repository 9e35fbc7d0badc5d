//! Wake-ups that scale through the public API: thousands of
//! processes receiving on one channel, with selects over two channels and timeouts
//! that leave, under both `--sync` modes. The script is `tests/lua/channel_wake_stress.lua`
//! (also run by the `lutra` program's script tests); it asserts that every value is
//! received exactly once, and a lost wake-up would end in a deadlock report, not a
//! hang: both are checked here.
//!
//! That a message wakes one receiver, not all, is counted: `RECEIVERS` processes
//! provably wait (each reports what it waits on) on one channel before any message is
//! sent, and the wake-ups while the messages go through are counted by the scheduler
//! (`LuaRuntime::task_unparks`, parked processes made runnable). One receiver per
//! message costs two per message (the receiver, then the rendezvous sender it takes
//! from); waking every waiting receiver per message cost five to nine per message
//! when tried.

use lutra_lua::{LuaRuntime, Options, Outcome, SyncMode, WaitOutcome};
use std::time::{Duration, Instant};

const SCRIPT: &str = include_str!("../../../tests/lua/channel_wake_stress.lua");

fn stress(sync: SyncMode) {
    let runtime = LuaRuntime::new(Options {
        workers: Some(2),
        sync,
        ..Options::default()
    });
    let main = runtime.spawn_source("=channel_wake_stress.lua", SCRIPT);
    assert_eq!(runtime.wait(), WaitOutcome::AllFinished, "under {sync:?}");
    match main.outcome() {
        Outcome::Finished(_) => {}
        other => panic!("under {sync:?} the script did not finish: {other:?}"),
    }
}

#[test]
fn many_receivers_one_channel_locks() {
    stress(SyncMode::Locks);
}

#[test]
fn many_receivers_one_channel_tm() {
    stress(SyncMode::Tm);
}

/// Receivers blocked on one channel in `one_message_wakes_one_receiver`.
const RECEIVERS: u64 = 200;

fn wake_ups_per_message(sync: SyncMode) {
    let runtime = LuaRuntime::new(Options {
        workers: Some(2),
        sync,
        ..Options::default()
    });
    runtime.spawn_source("=setup", "assert(require('luaproc').newchannel('c'))");
    assert_eq!(runtime.wait(), WaitOutcome::AllFinished, "under {sync:?}");
    let receivers: Vec<_> = (0..RECEIVERS)
        .map(|_| runtime.spawn_source("=receiver", "return (require('luaproc').receive('c'))"))
        .collect();
    // Handshake: every receiver waits before the first message is sent.
    let deadline = Instant::now() + Duration::from_secs(60);
    while receivers
        .iter()
        .any(|receiver| receiver.waiting_on().is_none())
    {
        assert!(
            Instant::now() < deadline,
            "under {sync:?} the receivers never all waited"
        );
        std::thread::yield_now();
    }
    let before = runtime.task_unparks();
    runtime.spawn_source(
        "=sender",
        &format!("local luaproc = require('luaproc') for i = 1, {RECEIVERS} do assert(luaproc.send('c', i)) end"),
    );
    assert_eq!(runtime.wait(), WaitOutcome::AllFinished, "under {sync:?}");
    let woken = runtime.task_unparks() - before;
    for receiver in &receivers {
        assert!(
            matches!(receiver.outcome(), Outcome::Finished(_)),
            "under {sync:?}: {:?}",
            receiver.outcome()
        );
    }
    eprintln!("{sync:?}: {woken} wake-ups for {RECEIVERS} messages");
    // Per message: the receiver it is handed to, and the rendezvous sender woken by
    // the take (2 per message); one spare per message for a wake-up passed on.
    assert!(
        woken <= 3 * RECEIVERS,
        "under {sync:?}: {woken} wake-ups for {RECEIVERS} messages (more than one receiver woken per message)"
    );
}

#[test]
fn one_message_wakes_one_receiver_locks() {
    wake_ups_per_message(SyncMode::Locks);
}

#[test]
fn one_message_wakes_one_receiver_tm() {
    wake_ups_per_message(SyncMode::Tm);
}
