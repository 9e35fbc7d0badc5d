//! Builds the C tests of `tests/c` against the library this `cargo test` run built
//! (the `liblutra.so` next to the test binary) and runs them, with smaller workloads
//! than `make -C tests/c run`. Needs a C compiler (`cc`, or `$CC`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where the C tests are built: `target/<profile>/c-tests`, with `lib/` holding the
/// `liblutra.so` this run built (next to the test binary, in
/// `target/<profile>/deps`) under the names the linker and the loader (soname `liblutra.so.0`) look for.
fn out_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("test binary path");
        let deps = exe.parent().expect("target/<profile>/deps");
        let profile_dir = deps.parent().expect("target/<profile>");
        // `cargo test` leaves the cdylib in deps/; `cargo build` copies it up.
        let library = [deps, profile_dir]
            .iter()
            .map(|dir| dir.join("liblutra.so"))
            .find(|library| library.exists())
            .expect("liblutra.so was not built next to the test binary");
        let out = profile_dir.join("c-tests");
        std::fs::create_dir_all(out.join("lib")).expect("create c-tests/lib");
        for name in ["liblutra.so", "liblutra.so.0"] {
            let link = out.join("lib").join(name);
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&library, &link).expect("symlink the library");
        }
        out
    })
}

/// Compiles `tests/c/<name>.c` with `include` on the include path.
fn compile(name: &str, include: &str) -> PathBuf {
    let source = root().join("tests/c").join(format!("{name}.c"));
    let binary = out_dir().join(name);
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let lib = out_dir().join("lib");
    let status = Command::new(&compiler)
        .args([
            "-O1",
            "-g",
            "-std=gnu11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pthread",
        ])
        .arg(format!("-I{}", root().join(include).display()))
        .arg(&source)
        .arg("-o")
        .arg(&binary)
        .arg(format!("-L{}", lib.display()))
        .arg("-llutra")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .status()
        .unwrap_or_else(|error| panic!("cannot run {compiler}: {error}"));
    assert!(
        status.success(),
        "{compiler} failed on {}",
        source.display()
    );
    binary
}

/// Runs `binary` with `env` and checks its verdict line, "N passed, 0 failed".
fn run(binary: &Path, env: &[(&str, &str)]) {
    let output = Command::new(binary)
        .env_remove("LUTRA_STM_DESIGN")
        .env_remove("LUTRA_STM_CM")
        .envs(env.iter().copied())
        .output()
        .expect("run the C test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let verdict = stdout.lines().last().unwrap_or_default();
    assert!(
        output.status.success() && verdict.ends_with(" passed, 0 failed"),
        "{} {env:?} failed ({}):\n{stdout}\n{stderr}",
        binary.display(),
        output.status
    );
}

#[test]
fn api() {
    run(&compile("api", "include"), &[]);
}

#[test]
fn loud_configuration_and_unstarted_engine() {
    run(&compile("loud", "include"), &[]);
}

#[test]
fn bank_under_each_design() {
    let bank = compile("bank", "include/lutra");
    for (design, cm) in [
        ("wb-ctl", "backoff"),
        ("wb-etl", "timestamp"),
        ("wb-etl", "suicide"),
    ] {
        run(
            &bank,
            &[
                ("LUTRA_STM_DESIGN", design),
                ("LUTRA_STM_CM", cm),
                ("BANK_OPS", "3000"),
            ],
        );
    }
}

#[test]
fn intset_under_each_design() {
    let intset = compile("intset", "include/lutra");
    for (design, cm) in [("wb-ctl", "aggressive"), ("wb-etl", "backoff")] {
        run(
            &intset,
            &[
                ("LUTRA_STM_DESIGN", design),
                ("LUTRA_STM_CM", cm),
                ("INTSET_OPS", "2000"),
            ],
        );
    }
}

#[test]
fn sched_bank_tasks_on_two_workers() {
    let sched_bank = compile("sched_bank", "include/lutra");
    for (design, cm) in [("wb-ctl", "backoff"), ("wb-etl", "timestamp")] {
        run(
            &sched_bank,
            &[
                ("LUTRA_STM_DESIGN", design),
                ("LUTRA_STM_CM", cm),
                ("SCHED_TASKS", "64"),
                ("SCHED_WORKERS", "2"),
                ("BANK_OPS", "200"),
            ],
        );
    }
}

#[test]
fn cxlock_under_each_design() {
    let cxlock = compile("cxlock", "include");
    for (design, cm) in [("wb-ctl", "backoff"), ("wb-etl", "priority")] {
        run(
            &cxlock,
            &[
                ("LUTRA_STM_DESIGN", design),
                ("LUTRA_STM_CM", cm),
                ("CX_OPS", "500"),
            ],
        );
    }
}
