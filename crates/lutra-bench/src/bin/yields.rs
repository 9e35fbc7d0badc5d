//! The cost of `lutra_sched::yield_now` between busy tasks: time
//! per yield, and system calls per yield counted by `strace`, in each synchronisation
//! mode of the run queue.
//!
//! Each run starts a runtime with `workers` workers and `tasks per worker × workers`
//! tasks that do nothing but yield `yields` times each. Time per yield is the run's
//! wall time × workers / yields (what one yield costs the worker that makes it).
//! System calls per yield come from running this binary again under
//! `strace -f -c` twice, with `yields` and with 0 yields, so the runtime's start and
//! shutdown cancel out: (calls(yields) − calls(0)) / total yields. Instructions per
//! yield, which do not move with the machine's load, likewise come from two runs
//! under callgrind, with `--count-yields` and twice as many: (cost(2n) − cost(n)) /
//! n yields of every task, the median of three such pairs. Without `strace` or
//! `valgrind` on the machine those columns read `-`.
//!
//! ```text
//! cargo run --release -p lutra-bench --bin yields
//! cargo run --release -p lutra-bench --bin yields -- --workers 1,2 --tasks 1,4 --yields 100000
//! cargo run --release -p lutra-bench --bin yields -- --no-strace --no-callgrind
//! ```

use clap::Parser;
use lutra_bench::harness::csv::{Csv, default_csv_path};
use lutra_bench::harness::table::TextTable;
use lutra_sched::Runtime;
use lutra_sched::sync_mode::SyncMode;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

/// Time and system calls per `yield_now`, per sync mode, worker count and task count.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Synchronisation modes, comma-separated (locks, tm).
    #[arg(long, value_delimiter = ',', default_values = ["locks", "tm"])]
    sync: Vec<SyncMode>,
    /// Worker counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 2])]
    workers: Vec<usize>,
    /// Tasks per worker, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [2usize, 8])]
    tasks: Vec<usize>,
    /// Yields per task.
    #[arg(long, default_value_t = 200_000)]
    yields: u64,
    /// Timed runs per configuration (the fastest is kept).
    #[arg(long, default_value_t = 3)]
    repeat: u32,
    /// Do not count system calls with strace.
    #[arg(long)]
    no_strace: bool,
    /// Do not count instructions with callgrind.
    #[arg(long)]
    no_callgrind: bool,
    /// Yields per task of the smaller callgrind run (the other makes twice as many).
    #[arg(long, default_value_t = 20_000)]
    count_yields: u64,
    /// CSV output [default: target/bench/yields.csv].
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Internal: run one configuration once and exit (what strace traces).
    #[arg(long, hide = true)]
    once: bool,
}

/// One configuration.
#[derive(Clone, Copy, Debug)]
struct Config {
    sync: SyncMode,
    workers: usize,
    tasks_per_worker: usize,
    yields: u64,
}

impl Config {
    fn tasks(self) -> usize {
        self.workers * self.tasks_per_worker
    }

    fn total_yields(self) -> u64 {
        self.tasks() as u64 * self.yields
    }
}

/// Runs `config` once; returns the seconds from the first spawn to the last join.
fn run(config: Config) -> f64 {
    let runtime = Runtime::builder()
        .workers(config.workers)
        .allow_more_workers_than_cores()
        .sync(config.sync)
        .build();
    let yields = config.yields;
    let start = Instant::now();
    let tasks: Vec<_> = (0..config.tasks())
        .map(|_| {
            runtime.spawn(move || {
                for _ in 0..yields {
                    lutra_sched::yield_now();
                }
            })
        })
        .collect();
    tasks.into_iter().for_each(|task| task.join().unwrap());
    start.elapsed().as_secs_f64()
}

/// The arguments that make this binary run `config` once (what a tool traces).
fn once_args(config: Config) -> Vec<String> {
    let mut args: Vec<String> = ["--once", "--no-strace", "--no-callgrind", "--repeat", "1"]
        .map(String::from)
        .into();
    args.extend(["--sync".into(), config.sync.name().into()]);
    args.extend(["--workers".into(), config.workers.to_string()]);
    args.extend(["--tasks".into(), config.tasks_per_worker.to_string()]);
    args.extend(["--yields".into(), config.yields.to_string()]);
    args
}

/// System calls counted by `strace -f -c` over one run of `config`: (futex, all).
fn traced_calls(config: Config) -> Option<(u64, u64)> {
    let out = std::env::temp_dir().join(format!("lutra-yields-{}.strace", std::process::id()));
    let status = Command::new("strace")
        .arg("-f")
        .arg("-c")
        .arg("-o")
        .arg(&out)
        .arg(std::env::current_exe().ok()?)
        .args(once_args(config))
        .output()
        .ok()?
        .status;
    let summary = std::fs::read_to_string(&out).ok();
    let _ = std::fs::remove_file(&out);
    if !status.success() {
        return None;
    }
    parse_strace_summary(&summary?)
}

/// The `calls` column of the `futex` and `total` lines of `strace -c`'s table.
fn parse_strace_summary(summary: &str) -> Option<(u64, u64)> {
    let calls = |name: &str| {
        summary.lines().find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.last() == Some(&name)).then(|| {
                // "% time seconds usecs/call calls [errors] syscall"
                fields.get(3).and_then(|calls| calls.parse::<u64>().ok())
            })?
        })
    };
    Some((calls("futex").unwrap_or(0), calls("total")?))
}

/// Instructions callgrind counts over one run of `config` (all threads).
fn counted_instructions(config: Config) -> Option<u64> {
    let output = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(std::env::current_exe().ok()?)
        .args(once_args(config))
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    // "==pid== Collected : 123456789" on standard error.
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .find_map(|line| line.split_once("Collected :"))
        .and_then(|(_, count)| count.trim().parse().ok())
}

/// Instructions per yield: the difference between runs of `yields` and `2 × yields`
/// yields per task, divided by the yields added; the median of three such pairs.
/// With more than one worker, what the others do while a worker yields (a steal, a
/// park, a rest) depends on how valgrind interleaves the threads, and now and then
/// lands in one run of a pair only: the median leaves that pair out.
fn instructions_per_yield(config: Config, yields: u64) -> Option<f64> {
    let at = |yields| counted_instructions(Config { yields, ..config });
    let added = config.tasks() as u64 * yields;
    let mut pairs = (0..3)
        .map(|_| {
            let (once, twice) = (at(yields)?, at(2 * yields)?);
            Some(twice.saturating_sub(once) as f64 / added as f64)
        })
        .collect::<Option<Vec<f64>>>()?;
    pairs.sort_by(f64::total_cmp);
    Some(pairs[1])
}

/// Calls per yield: the difference between a run with yields and one without.
fn calls_per_yield(config: Config) -> Option<(f64, f64)> {
    let with = traced_calls(config)?;
    let without = traced_calls(Config {
        yields: 0,
        ..config
    })?;
    let per = |a: u64, b: u64| a.saturating_sub(b) as f64 / config.total_yields() as f64;
    Some((per(with.0, without.0), per(with.1, without.1)))
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    if args.once {
        for &sync in &args.sync {
            for &workers in &args.workers {
                for &tasks_per_worker in &args.tasks {
                    run(Config {
                        sync,
                        workers,
                        tasks_per_worker,
                        yields: args.yields,
                    });
                }
            }
        }
        return Ok(());
    }
    let path = args.csv.unwrap_or_else(|| default_csv_path("yields"));
    let mut csv = Csv::with_header(
        &path,
        "sync,workers,tasks,yields,seconds,ns_per_yield,futex_per_yield,syscalls_per_yield,instructions_per_yield",
    )?;
    let table = TextTable::new(" ")
        .right("sync", 5)
        .right("workers", 7)
        .right("tasks", 5)
        .right("yields", 10)
        .right("seconds", 10)
        .right("ns/yield", 12)
        .right("futex/yield", 11)
        .right("syscalls/yield", 14)
        .right("instr/yield", 12);
    print!("{}", table.header());
    for &sync in &args.sync {
        for &workers in &args.workers {
            for &tasks_per_worker in &args.tasks {
                let config = Config {
                    sync,
                    workers,
                    tasks_per_worker,
                    yields: args.yields,
                };
                let seconds = (0..args.repeat.max(1))
                    .map(|_| run(config))
                    .fold(f64::INFINITY, f64::min);
                let ns = seconds * 1e9 * workers as f64 / config.total_yields() as f64;
                let calls = (!args.no_strace).then(|| calls_per_yield(config)).flatten();
                let show =
                    |value: Option<f64>| value.map_or("-".to_string(), |v| format!("{v:.4}"));
                let (futex, all) = (calls.map(|c| c.0), calls.map(|c| c.1));
                let instructions = (!args.no_callgrind)
                    .then(|| instructions_per_yield(config, args.count_yields))
                    .flatten()
                    .map_or("-".to_string(), |v| format!("{v:.0}"));
                let cells = [
                    sync.name().to_owned(),
                    workers.to_string(),
                    config.tasks().to_string(),
                    config.total_yields().to_string(),
                    format!("{seconds:.3}"),
                    format!("{ns:.1}"),
                    show(futex),
                    show(all),
                    instructions.clone(),
                ];
                print!("{}", table.line(&cells.each_ref().map(String::as_str), ""));
                csv.write_records([lutra_bench::fields![
                    sync.name(),
                    workers,
                    config.tasks(),
                    config.total_yields(),
                    format!("{seconds:.6}"),
                    format!("{ns:.1}"),
                    show(futex),
                    show(all),
                    instructions
                ]])?;
            }
        }
    }
    println!("CSV: {}", csv.path().display());
    Ok(())
}
