//! Wake-ups that scale through the public API: thousands of
//! processes receiving on one channel, with selects over two channels and timeouts
//! that leave, under both `--sync` modes. The script is `tests/lua/channel_wake_stress.lua`
//! (also run by the `lutra` program's script tests); it asserts that every value is
//! received exactly once, and a lost wake-up would end in a deadlock report, not a
//! hang: both are checked here.

use lutra_lua::{LuaRuntime, Options, Outcome, SyncMode, WaitOutcome};

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
