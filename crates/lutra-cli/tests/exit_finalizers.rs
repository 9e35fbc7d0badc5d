//! The finalizers still pending in pooled states run when the program ends: the
//! state of a finished process is pooled after its finalizers ran, and one of them
//! set a new finalizer (on what it stored); `lutra` closes the pooled states last
//! (`LuaRuntime::close_pool_for_exit`), so that finalizer runs and its output is
//! written, every time (the end of the program used to race the runtime's drop).

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
    let dir = std::env::temp_dir().join(format!("lutra-exit-finalizers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("pooled.lua");
    std::fs::write(&script, SCRIPT).unwrap();
    for _ in 0..8 {
        let output = Command::new(env!("CARGO_BIN_EXE_lutra"))
            .arg(&script)
            .output()
            .expect("lutra runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{output:?}");
        assert_eq!(stdout, "main done\nclosed at exit\n");
        assert!(output.stderr.is_empty(), "{output:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
