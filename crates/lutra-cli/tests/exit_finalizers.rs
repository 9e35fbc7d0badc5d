//! The finalizers still pending in pooled states run when the program ends: the
//! state of a finished process is pooled after its finalizers ran, and one of them
//! set a new finalizer (on what it stored); `lutra` closes the pooled states last
//! (`LuaRuntime::close_pool_for_exit`), so that finalizer runs and its output is
//! written, every time (the end of the program used to race the runtime's drop).

mod common;

use common::ScriptFile;
use std::process::Command;

const SCRIPT: &str = r#"
local p = lutra.spawn(function()
  setmetatable({}, { __gc = function()
    kept = setmetatable({}, { __gc = function() io.write("closed at exit\n") end })
  end })
end)
p:join()
print("main done")
"#;

#[test]
fn pooled_states_run_their_pending_finalizers_at_exit() {
    let script = ScriptFile::new("exit-finalizers", "pooled.lua", SCRIPT);
    for _ in 0..8 {
        let output = Command::new(env!("CARGO_BIN_EXE_lutra"))
            .arg(script.path())
            .output()
            .expect("lutra runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{output:?}");
        assert_eq!(stdout, "main done\nclosed at exit\n");
        assert!(output.stderr.is_empty(), "{output:?}");
    }
}
