//! examples/weblog.lua (lpeg, cjson and luasocket in processes, with its own HTTP
//! server) gives under `lutra -w 2` exactly the output of the same program run
//! serially by a stock `lua5.4` (its processes as coroutines).

use std::path::Path;
use std::process::Command;

fn run(program: &str, args: &[&str]) -> String {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/weblog.lua");
    let output = Command::new(program)
        .args(args)
        .arg(&example)
        .args(["4", "1500"])
        .output()
        .unwrap_or_else(|e| panic!("{program} starts: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{program} {args:?} failed:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn the_parallel_run_matches_the_serial_one() {
    let serial = run("lua5.4", &[]);
    assert!(
        serial.starts_with('{')
            && serial.contains("\"lines\":6000,")
            && serial.contains("\"unparsed\":0}"),
        "{serial}"
    );
    for workers in ["1", "2"] {
        let parallel = run(env!("CARGO_BIN_EXE_lutra"), &["-w", workers]);
        assert_eq!(parallel, serial, "lutra -w {workers}");
    }
}
