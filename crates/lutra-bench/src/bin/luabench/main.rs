//! `luabench`: Lua programs under `lutra` beside the same scripts under stock
//! `lua5.4` (one core; the scripts' `shim.lua` runs processes as coroutines), in one
//! run: seed 001's three experiments (one long process under W workers; 50 senders
//! and 50 receivers over 1/2/4 channels, and over one with the paper's payload, the
//! string "message"; parallel string search over log files),
//! each under `--sync=locks` and `--sync=tm` when `lutra` has that option; seed 002's
//! fib hub and word count (beside two `lua5.4` processes on half the files each at
//! once: the machine's ceiling for that work on two cores, measured in the same
//! rounds); seed 000's While and Iterator loops as processes; wake-ups that scale
//! (N receivers on one channel then N sends, beside a channel each).
//! With `LUAPROC_SRC` (a checkout of the original luaproc), experiment 2's
//! luaproc-API script runs under the original luaproc too, beside `lutra`.
//!
//! Every run is a child process, timed from outside (elapsed time and the CPU time
//! of all its threads); the best of `--repeats` is kept, the repeats taken in rounds
//! over every configuration (a burst of outside load meets one run of each). Prints one table per
//! experiment with the ratios (lutra ÷ lua5.4, N workers ÷ 1 worker, tm ÷ locks),
//! then the aims, and writes every run to `target/bench/luabench.csv`.
//!
//! ```text
//! cargo build --release -p lutra-cli        # the `lutra` binary, found beside this one
//! cargo run --release -p lutra-bench --bin luabench               # full (≈ 5 min)
//! cargo run --release -p lutra-bench --bin luabench -- --quick    # ≈ 30 s
//! cargo run --release -p lutra-bench --bin luabench -- --only exp2,fib --repeats 3
//! LUTRA_BIN=/path/to/lutra LUA_BIN=lua5.4 … luabench -- --lutra-arg=--preempt=0
//! ```

mod child;
mod data;
mod figures;
mod plan;
mod report;

use clap::Parser;
use lutra_bench::harness::csv::Csv;
use lutra_bench::harness::sweep::progress_bar;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Lua processes under `lutra` beside stock `lua5.4`: seeds 000, 001 and 002.
#[derive(Parser, Debug)]
#[command(version)]
pub(crate) struct Args {
    /// A fast smoke run (≈ 30 s): smaller sizes, fewer configurations, one repeat.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Experiments, comma-separated (exp1, exp2, exp3, fib, wc, micro, wake) [default: all].
    #[arg(long, value_delimiter = ',', value_parser = plan::EXPERIMENTS)]
    pub(crate) only: Option<Vec<String>>,
    /// Runs of each configuration; the fastest is kept [default: 2; --quick: 1].
    #[arg(long)]
    pub(crate) repeats: Option<usize>,
    /// The `lutra` program [default: $LUTRA_BIN, else `lutra` beside this binary].
    #[arg(long)]
    pub(crate) lutra: Option<PathBuf>,
    /// The stock Lua [default: $LUA_BIN, else `lua5.4`].
    #[arg(long)]
    pub(crate) lua: Option<PathBuf>,
    /// An option given to every `lutra` run (repeatable), e.g. `--lutra-arg=--preempt=0`.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) lutra_arg: Vec<String>,
    /// The loadable module (`lutra.so`), run under the stock Lua beside the `lutra`
    /// program [default: $LUTRA_MODULE, else `../lua-module/lutra.so` from this
    /// binary: what `scripts/test-module.sh` builds]. Module runs are left out when
    /// it is missing.
    #[arg(long)]
    pub(crate) module: Option<PathBuf>,
    /// The original luaproc's sources (a checkout of askyrme/luaproc)
    /// [default: $LUAPROC_SRC]: built for Lua 5.4 (`scripts/build-luaproc.sh`) and
    /// run on experiment 2's luaproc-API script beside `lutra`. Left out when unset.
    #[arg(long)]
    pub(crate) luaproc_src: Option<PathBuf>,
    /// The benchmark scripts [default: bench/lua of this repository].
    #[arg(long)]
    pub(crate) scripts: Option<PathBuf>,
    /// Where generated input files go.
    #[arg(long, default_value = "target/bench/lua-data")]
    pub(crate) data: PathBuf,
    /// Where to write the CSV file.
    #[arg(long, default_value = "target/bench/luabench.csv")]
    pub(crate) csv: PathBuf,
    /// Seconds after which a run is killed and reported as failed.
    #[arg(long, default_value_t = 120)]
    pub(crate) limit: u64,
}

/// The programs a run can use, located and checked.
pub(crate) struct Programs {
    pub(crate) lutra: PathBuf,
    pub(crate) lua: Option<PathBuf>,
    /// `lutra` has `--sync=locks|tm`.
    pub(crate) has_sync: bool,
    /// The loadable module, when found.
    pub(crate) module: Option<PathBuf>,
    /// The directory of the original luaproc's `luaproc.so`, when built.
    pub(crate) luaproc: Option<PathBuf>,
}

fn locate(args: &Args) -> Result<Programs, String> {
    let lutra = args
        .lutra
        .clone()
        .or_else(|| std::env::var_os("LUTRA_BIN").map(PathBuf::from))
        .or_else(|| {
            let exe = std::env::current_exe().ok()?;
            Some(exe.parent()?.join("lutra"))
        })
        .ok_or("cannot tell where `lutra` is; give --lutra or LUTRA_BIN")?;
    let help = Command::new(&lutra)
        .arg("--help")
        .output()
        .map_err(|error| {
            format!(
                "cannot run {}: {error}\n(build it first: cargo build --release -p lutra-cli, \
             or give --lutra / LUTRA_BIN)",
                lutra.display()
            )
        })?;
    let has_sync = String::from_utf8_lossy(&help.stdout).contains("--sync");
    let lua = args
        .lua
        .clone()
        .or_else(|| std::env::var_os("LUA_BIN").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("lua5.4"));
    let lua_works = Command::new(&lua)
        .arg("-v")
        .output()
        .is_ok_and(|out| out.status.success());
    if !lua_works {
        eprintln!(
            "note: {} not found: the lua5.4 columns stay empty",
            lua.display()
        );
    }
    let module = args
        .module
        .clone()
        .or_else(|| std::env::var_os("LUTRA_MODULE").map(PathBuf::from))
        .or_else(|| {
            let exe = std::env::current_exe().ok()?;
            Some(exe.parent()?.join("../lua-module/lutra.so"))
        })
        .filter(|path| path.is_file());
    if module.is_none() {
        eprintln!(
            "note: the lutra module is not built (PROFILE=release scripts/test-module.sh): \
             no module runs"
        );
    }
    Ok(Programs {
        lutra,
        lua: lua_works.then_some(lua),
        has_sync,
        module,
        luaproc: original_luaproc(args),
    })
}

/// Builds the original luaproc from `--luaproc-src` / `LUAPROC_SRC` with
/// `scripts/build-luaproc.sh`: the directory of its `luaproc.so`, or `None` (with a
/// note) when no sources are given or the build fails.
fn original_luaproc(args: &Args) -> Option<PathBuf> {
    let sources = args
        .luaproc_src
        .clone()
        .or_else(|| std::env::var_os("LUAPROC_SRC").map(PathBuf::from))?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/build-luaproc.sh");
    let built = Command::new(&script)
        .env("LUAPROC_SRC", &sources)
        .stderr(std::process::Stdio::inherit())
        .output();
    match built {
        Ok(output) if output.status.success() => Some(PathBuf::from(
            String::from_utf8_lossy(&output.stdout).trim(),
        )),
        Ok(output) => {
            eprintln!(
                "note: the original luaproc was not built ({}): no luaproc runs",
                output.status
            );
            None
        }
        Err(error) => {
            eprintln!(
                "note: cannot run {}: {error}: no luaproc runs",
                script.display()
            );
            None
        }
    }
}

fn scripts_dir(args: &Args) -> PathBuf {
    args.scripts
        .clone()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/lua"))
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let programs = match locate(&args) {
        Ok(programs) => programs,
        Err(message) => {
            eprintln!("luabench: {message}");
            std::process::exit(2);
        }
    };
    let scripts = std::fs::canonicalize(scripts_dir(&args))?;
    let data = std::path::absolute(&args.data)?;
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let specs = plan::build(&args, &programs, &data, cores)?;
    let repeats = args
        .repeats
        .unwrap_or(if args.quick { 1 } else { 2 })
        .max(1);
    println!(
        "luabench · {cores} cores · {} runs × best of {repeats} · lutra {} · sync variants: {}\n",
        specs.len(),
        programs.lutra.display(),
        if programs.has_sync {
            "locks, tm"
        } else {
            "none (lutra has no --sync yet)"
        }
    );
    let interconnect_before = lutra_bench::harness::interconnect::round_trip_ns();
    let progress = progress_bar((specs.len() * repeats) as u64);
    let limit = Duration::from_secs(args.limit);
    // Round by round over every configuration, so that a burst of outside load on this
    // shared machine meets one run of a configuration, not all of its repeats.
    let mut best: Vec<Option<child::Measured>> = specs.iter().map(|_| None).collect();
    let mut rounds: Vec<Vec<child::Measured>> = specs.iter().map(|_| Vec::new()).collect();
    for _ in 0..repeats {
        for ((spec, best), rounds) in specs.iter().zip(&mut best).zip(&mut rounds) {
            progress.set_message(spec.label());
            let invocation = child::Invocation {
                program: &spec.program,
                args: &spec.argv,
                env: &spec.env,
            };
            let measured = child::run(invocation, &scripts, spec.expect, limit);
            rounds.push(measured.clone());
            progress.inc(1);
            let better = match best {
                None => true,
                Some(old) => measured.ok && (!old.ok || measured.wall < old.wall),
            };
            if better {
                *best = Some(measured);
            }
        }
    }
    let rows: Vec<_> = specs
        .into_iter()
        .zip(best)
        .zip(rounds)
        .map(|((spec, measured), rounds)| report::Row {
            spec,
            measured: measured.unwrap_or_default(),
            rounds,
        })
        .collect();
    progress.finish_and_clear();
    print!("{}", report::tables(&rows));
    print_interconnect(
        interconnect_before,
        lutra_bench::harness::interconnect::round_trip_ns(),
    );
    print!("{}", report::aims(&rows, cores));
    let mut csv = Csv::with_header(&args.csv, report::CSV_HEADER)?;
    csv.write_records(rows.iter().map(|row| report::csv_record(row, &rows)))?;
    eprintln!("CSV written to {}", csv.path().display());
    Ok(())
}

/// The cache line round trip between two cores before and after the runs: the
/// host's placement of the virtual CPUs, which sets what shared-line workloads on
/// two workers can do (see `lutra_bench::harness::interconnect`).
fn print_interconnect(before: Option<f64>, after: Option<f64>) {
    if let (Some(before), Some(after)) = (before, after) {
        println!(
            "core-to-core cache line round trip: {before:.0} ns before the runs, \
             {after:.0} ns after (about 60 ns on these machines when the two CPUs are \
             near; several times that when the host places them far apart, which slows \
             the two-worker runs that share a channel)\n"
        );
    }
}
