//! Builds what the benchmark runs: `liblutra.a` (through cargo), Lutra's
//! `libitm.so.1` (`scripts/build-itm.sh`) and the C programs of `bench/c` (through
//! its Makefile), into `target/cbench`; and, when `TINYSTM_SRC` names tinySTM's
//! sources, tinySTM (`scripts/build-tinystm.sh`) and the same programs against it.

use crate::Args;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The built programs.
pub(crate) struct Programs {
    /// `target/cbench`: `cbench-<system>` and `count-<system>`.
    pub(crate) dir: PathBuf,
    /// Lutra's `libitm.so.1` (`target/release/itm`), for the `-fgnu-tm` build.
    pub(crate) lutra_itm: PathBuf,
    /// Whether `cbench-tinystm` was built (tinySTM's sources in `TINYSTM_SRC`).
    pub(crate) tinystm: bool,
}

impl Programs {
    /// The benchmark program of `system` (`seq`, `lutra`, `libitm`).
    pub(crate) fn bench(&self, system: &str) -> PathBuf {
        self.dir.join(format!("cbench-{system}"))
    }

    /// The instruction-count program of `system`.
    pub(crate) fn count(&self, system: &str) -> PathBuf {
        self.dir.join(format!("count-{system}"))
    }
}

/// The repository: `--root`, else two levels above this crate's manifest.
fn root(args: &Args) -> PathBuf {
    args.root.clone().unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .canonicalize()
            .unwrap_or_else(|_| PathBuf::from("."))
    })
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|error| format!("{what}: cannot start: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// Builds `liblutra.a` (unless `--no-cargo`) and the C programs.
///
/// # Errors
/// A build that fails, or `cargo` / `make` missing.
pub(crate) fn build(args: &Args) -> Result<Programs, String> {
    let root = root(args);
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    if !args.no_cargo {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        run(
            Command::new(cargo)
                .args(["build", "--release", "-p", "lutra-capi", "--manifest-path"])
                .arg(root.join("Cargo.toml")),
            "cargo build --release -p lutra-capi",
        )?;
    }
    // Lutra's libitm.so.1, linked from liblutra.a (built above, or by the caller).
    run(
        Command::new(root.join("scripts/build-itm.sh"))
            .arg("release")
            .env("LUTRA_ITM_LINK_ONLY", "1")
            .stdout(std::process::Stdio::null()),
        "scripts/build-itm.sh release",
    )?;
    let dir = target.join("cbench");
    run(
        make_bench_c(&root, &dir).arg(format!("LIB={}", target.join("release").display())),
        "make -C bench/c",
    )?;
    let tinystm = match build_tinystm(&root, &dir) {
        Ok(()) => true,
        Err(note) => {
            eprintln!("cbench: no tinySTM column: {note}");
            false
        }
    };
    Ok(Programs {
        dir,
        lutra_itm: target.join("release/itm"),
        tinystm,
    })
}

/// Builds tinySTM from `TINYSTM_SRC` and the C programs against it into `dir`.
///
/// # Errors
/// Why there is no tinySTM column: `TINYSTM_SRC` unset, or a build that failed.
fn build_tinystm(root: &Path, dir: &Path) -> Result<(), String> {
    if std::env::var_os("TINYSTM_SRC").is_none() {
        return Err("set TINYSTM_SRC to tinySTM's sources to get it (bench/c/README.md)".into());
    }
    let output = Command::new(root.join("scripts/build-tinystm.sh"))
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|error| format!("scripts/build-tinystm.sh: cannot start: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "scripts/build-tinystm.sh failed ({})",
            output.status
        ));
    }
    let built = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    run(
        make_bench_c(root, dir)
            .arg(format!("TINYSTM={built}"))
            .arg("tinystm"),
        "make -C bench/c tinystm",
    )
}

/// `make -C bench/c OUT=dir`, to which the caller adds its variables and targets.
fn make_bench_c(root: &Path, dir: &Path) -> Command {
    let mut make = Command::new("make");
    make.arg("--no-print-directory")
        .arg("-C")
        .arg(root.join("bench/c"))
        .arg(format!("OUT={}", dir.display()));
    make
}
