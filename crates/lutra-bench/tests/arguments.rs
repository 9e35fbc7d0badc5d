//! `lutra-bench`'s command line: a directory option that names something unusable is
//! an error naming the option and the path, with a non-zero exit status, before
//! anything runs.

use std::path::Path;
use std::process::{Command, Output};

fn lutra_bench(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lutra-bench"))
        .arg("--smoke")
        .args(args)
        .output()
        .expect("lutra-bench runs")
}

fn refused(output: &Output, option: &str, path: &Path) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    let named = format!("{option} {}", path.display());
    assert!(stderr.contains(&named), "stderr lacks {named:?}: {stderr}");
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lutra-bench-args-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn an_out_that_is_a_file_is_refused_with_its_path() {
    let dir = scratch("out");
    let file = dir.join("a-file");
    std::fs::write(&file, "kept").unwrap();
    let output = lutra_bench(&["--out".as_ref(), file.as_os_str()]);
    refused(&output, "--out", &file);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept");
}

#[test]
fn a_bin_dir_that_does_not_exist_is_refused_with_its_path() {
    let dir = scratch("bin");
    let missing = dir.join("no-such-directory");
    let out = dir.join("out");
    let output = lutra_bench(&[
        "--bin-dir".as_ref(),
        missing.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    refused(&output, "--bin-dir", &missing);
}
