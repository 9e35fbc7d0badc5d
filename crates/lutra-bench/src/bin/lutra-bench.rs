//! `lutra-bench`: every seed's experiment side by side with its reference, in one
//! run, with a progress bar per experiment; writes CSV, charts (SVG and PNG) and a
//! report (Markdown and self-contained HTML) to `target/bench/suite/`.
//!
//! ```text
//! make bench                                                     # full run (≈ 15 min on 2 cores)
//! cargo run --release -p lutra-bench --bin lutra-bench -- --quick            # ≈ 2 min
//! cargo run --release -p lutra-bench --bin lutra-bench -- --quick seed000 seed004
//! cargo run --release -p lutra-bench --bin lutra-bench -- --quick --publish docs/bench
//! ```
//!
//! The benchmark binaries are looked for beside this one (build them with
//! `cargo build --release -p lutra-bench --bins -p lutra-cli`, which `make bench`
//! does); an experiment whose binary is missing says "not available" in the report.

use clap::Parser;
use lutra_bench::harness::suite::{self, Options, jobs::Places, jobs::Scale};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Runs Lutra's experiments beside their references and writes charts and a report.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Experiments to run (seed000, seed001, seed002, seed003, seed004, engine)
    /// [default: all].
    experiments: Vec<String>,
    /// Reduced sizes: everything in about a minute.
    #[arg(long, conflicts_with = "smoke")]
    quick: bool,
    /// Tiny sizes, only the Rust benchmarks: checks that the suite works (seconds).
    #[arg(long)]
    smoke: bool,
    /// Output directory [default: target/bench/suite].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also copy the charts (SVG) and a Markdown report linking them here
    /// (docs/performance.md's `docs/bench`).
    #[arg(long)]
    publish: Option<PathBuf>,
    /// Where the benchmark binaries are [default: beside this program].
    #[arg(long)]
    bin_dir: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let repo = repo.canonicalize().unwrap_or(repo);
    let bin_dir = args.bin_dir.clone().or_else(|| {
        let exe = std::env::current_exe().ok()?;
        Some(exe.parent()?.to_path_buf())
    });
    let Some(bin_dir) = bin_dir else {
        eprintln!("lutra-bench: cannot tell where the benchmark binaries are; give --bin-dir");
        return ExitCode::from(2);
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| repo.join("target").join("bench").join("suite"));
    let out = std::path::absolute(&out).unwrap_or(out);
    let scale = if args.smoke {
        Scale::Smoke
    } else if args.quick {
        Scale::Quick
    } else {
        Scale::Full
    };
    if let Err(error) = suite::select(&args.experiments) {
        eprintln!("lutra-bench: {error}");
        return ExitCode::from(2);
    }
    if let Err(error) = check_places(&args, &out) {
        eprintln!("lutra-bench: {error}");
        return ExitCode::from(2);
    }
    let options = Options {
        scale,
        only: args.experiments.clone(),
        places: Places { bin_dir, repo, out },
        publish: args.publish.clone(),
    };
    match suite::run(&options) {
        Ok(outcome) => {
            println!("report: {}", outcome.markdown.display());
            println!("report: {}", outcome.html.display());
            println!(
                "{} chart files in {}",
                outcome.charts.len(),
                options.places.out.join("charts").display()
            );
            if outcome.undrawn.is_empty() {
                ExitCode::SUCCESS
            } else {
                // A figure with data that could not be drawn (no font, a write
                // error) fails the run: the report would lack it.
                for why in &outcome.undrawn {
                    eprintln!("lutra-bench: chart not drawn: {why}");
                }
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("lutra-bench: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Checks the directories named on the command line before anything runs, so that a
/// mistyped one is an error naming the option and the path (exit status 2), not a
/// bare system error after the run, or a run that silently does nothing: `--bin-dir`
/// must be a directory; `--out` is created if absent and must be a directory;
/// `--publish`, if it exists, must be a directory.
fn check_places(args: &Args, out: &Path) -> Result<(), String> {
    if let Some(dir) = &args.bin_dir
        && !dir.is_dir()
    {
        let why = if dir.exists() {
            "not a directory"
        } else {
            "no such directory"
        };
        return Err(format!(
            "--bin-dir {}: {why} (it holds the benchmark binaries: cargo build --release \
             -p lutra-bench --bins -p lutra-cli puts them in target/release)",
            dir.display()
        ));
    }
    if out.exists() && !out.is_dir() {
        return Err(format!(
            "--out {}: exists and is not a directory",
            out.display()
        ));
    }
    std::fs::create_dir_all(out)
        .map_err(|e| format!("--out {}: cannot create the directory: {e}", out.display()))?;
    if let Some(publish) = &args.publish
        && publish.exists()
        && !publish.is_dir()
    {
        return Err(format!(
            "--publish {}: exists and is not a directory",
            publish.display()
        ));
    }
    Ok(())
}
