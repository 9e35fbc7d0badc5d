//! The timed runs: every workload × system × thread count, as child processes
//! (`cbench-<system> <workload> <threads> <millis>`), contenders alternating within
//! each round, the best round kept.
//!
//! # Protocol
//! 1. For each round, workload and thread count, run the systems one after the
//!    other, starting with a different one each round (the sequential build up to
//!    8 threads, each thread on its own copy of the state beyond one; the floor on
//!    one thread; tinySTM when it was built).
//! 2. Parse the child's `result …` line; a child that fails its own consistency
//!    check, exits non-zero or outlives its time limit fails the benchmark.
//! 3. Keep, per workload × system × threads, the run with the highest throughput,
//!    and every round's throughput (for ratios taken round by round).

use crate::Args;
use crate::compile::Programs;
use crate::table;
use lutra_bench::harness::sweep::progress_bar;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The workloads, in table order.
pub(crate) const WORKLOADS: [&str; 9] = [
    "bank64", "bank4096", "list10", "list50", "rbtree10", "rbtree50", "hash10", "hash50",
    "vacation",
];

/// The systems, in table order: the sequential build, Lutra through `stm.h`
/// (`liblutra.a` with `LUTRA_INLINE`, the fastest way to link it), Lutra linked the
/// other ways (`liblutra.a` without `LUTRA_INLINE`, `liblutra.so` without and with
/// it), Lutra through GCC's TM ABI (the `-fgnu-tm` build run on Lutra's `libitm.so.1`),
/// libitm as a user gets it (on one thread libitm runs transactions serially,
/// uninstrumented), libitm with its multi-lock STM forced
/// (`ITM_DEFAULT_METHOD=ml_wt`), and the floor (one thread only: the sequential
/// code with every access behind `stm.h`'s inline test and no transaction begin or
/// commit, `bench/c/tm.h`), and tinySTM (the same `stm.h` calls against tinySTM's
/// default build, when `TINYSTM_SRC` names its sources).
pub(crate) const SYSTEMS: [&str; 10] = [
    "seq",
    "lutra",
    "lutra-a",
    "lutra-so",
    "lutra-so-inline",
    "lutra-itm",
    "libitm",
    "libitm-ml_wt",
    "floor",
    "tinystm",
];

/// The index of each system in [`SYSTEMS`].
pub(crate) const SEQ: usize = 0;
pub(crate) const LUTRA: usize = 1;
pub(crate) const LUTRA_STATIC: usize = 2;
pub(crate) const LUTRA_SHARED: usize = 3;
pub(crate) const LUTRA_SHARED_INLINE: usize = 4;
pub(crate) const LUTRA_ITM: usize = 5;
pub(crate) const LIBITM: usize = 6;
pub(crate) const LIBITM_ML_WT: usize = 7;
pub(crate) const FLOOR: usize = 8;
pub(crate) const TINYSTM: usize = 9;

/// The program of `system` and the environment it runs with.
fn program(programs: &Programs, system: &str) -> (std::path::PathBuf, Vec<(&'static str, String)>) {
    match system {
        "libitm-ml_wt" => (
            programs.bench("libitm"),
            vec![("ITM_DEFAULT_METHOD", "ml_wt".into())],
        ),
        "lutra-itm" => (
            programs.bench("libitm"),
            vec![("LD_LIBRARY_PATH", programs.lutra_itm.display().to_string())],
        ),
        other => (programs.bench(other), Vec::new()),
    }
}

/// The most threads the sequential build runs on (each with its own copy of the
/// state: 64 copies of the larger workloads would take hundreds of megabytes).
pub(crate) const CEILING_THREADS: usize = 8;

/// One measured run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Measurement {
    pub(crate) ops: u64,
    pub(crate) seconds: f64,
    /// Aborted attempts, when the system reports them.
    pub(crate) aborts: Option<u64>,
}

impl Measurement {
    /// Operations (transactions) per second.
    pub(crate) fn throughput(&self) -> f64 {
        self.ops as f64 / self.seconds
    }
}

/// The best run of each workload × system × threads.
pub(crate) type Results = BTreeMap<(usize, usize, usize), Measurement>;

/// Every round's throughput of each workload × system × threads, in round order:
/// the link modes are compared round by round (a ratio within a round holds on a
/// loaded machine better than a ratio of two bests).
pub(crate) type Rounds = BTreeMap<(usize, usize, usize), Vec<f64>>;

/// Parses `key=value` fields of the child's result line.
fn parse(line: &str) -> Option<Measurement> {
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|word| word.strip_prefix(name)?.strip_prefix('='))
    };
    if field("check")? != "ok" {
        return None;
    }
    let aborts: i64 = field("aborts")?.parse().ok()?;
    Some(Measurement {
        ops: field("ops")?.parse().ok()?,
        seconds: field("seconds")?.parse().ok()?,
        aborts: u64::try_from(aborts).ok(),
    })
}

/// Runs one child; fails on a bad exit, a failed check or a run 30 s past its time.
fn run_one(
    programs: &Programs,
    system: &str,
    workload: &str,
    threads: usize,
    millis: u64,
) -> Result<Measurement, String> {
    let what = format!("{system} {workload} on {threads} threads");
    let (path, environment) = program(programs, system);
    let mut command = Command::new(path);
    command.env_remove("ITM_DEFAULT_METHOD");
    command.envs(environment);
    let mut child = command
        .args([workload, &threads.to_string(), &millis.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|error| format!("{what}: cannot start: {error}"))?;
    let limit = Instant::now() + Duration::from_millis(millis) + Duration::from_secs(30);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{what}: did not finish in time (killed)"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(error) => return Err(format!("{what}: {error}")),
        }
    }
    let output = child
        .wait_with_output()
        .map_err(|error| format!("{what}: {error}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!("{what}: failed ({}): {text}", output.status));
    }
    text.lines()
        .find(|line| line.starts_with("result "))
        .and_then(parse)
        .ok_or_else(|| format!("{what}: no valid result line in: {text}"))
}

/// The plan of one run: which workloads, threads and systems, how long, how often.
struct Plan {
    workloads: Vec<usize>,
    threads: Vec<usize>,
    millis: u64,
    rounds: usize,
    /// Whether tinySTM runs (it was built).
    tinystm: bool,
}

impl Plan {
    fn from(args: &Args, programs: &Programs) -> Self {
        let workloads = match &args.only {
            Some(names) => WORKLOADS
                .iter()
                .enumerate()
                .filter(|(_, name)| names.iter().any(|chosen| chosen == *name))
                .map(|(index, _)| index)
                .collect(),
            None => (0..WORKLOADS.len()).collect(),
        };
        let default_threads = if args.quick {
            vec![1, 2]
        } else {
            vec![1, 2, 8, 64]
        };
        Self {
            workloads,
            threads: args.threads.clone().unwrap_or(default_threads),
            millis: args.millis.unwrap_or(if args.quick { 150 } else { 400 }),
            rounds: args.rounds.unwrap_or(if args.quick { 1 } else { 3 }).max(1),
            tinystm: programs.tinystm,
        }
    }

    /// The systems that run at `threads`, rotated by `round` (step 1). The
    /// sequential build runs up to [`CEILING_THREADS`] threads (beyond one, a copy of
    /// the state per thread: the machine's ceiling); the floor on one thread only;
    /// tinySTM only if it was built.
    fn systems(&self, threads: usize, round: usize) -> Vec<usize> {
        let mut systems: Vec<usize> = (0..SYSTEMS.len())
            .filter(|&system| system != SEQ || threads <= CEILING_THREADS)
            .filter(|&system| system != FLOOR || threads == 1)
            .filter(|&system| system != TINYSTM || self.tinystm)
            .collect();
        let len = systems.len();
        systems.rotate_left(round % len);
        systems
    }

    fn runs(&self) -> usize {
        let per_round: usize = self
            .threads
            .iter()
            .map(|&threads| self.systems(threads, 0).len())
            .sum();
        per_round * self.workloads.len() * self.rounds
    }
}

/// Runs the plan, prints the tables and writes the CSV file.
///
/// # Errors
/// A failed run (bad exit, failed check, timeout), or the CSV file.
pub(crate) fn main(args: &Args, programs: &Programs) -> Result<(), String> {
    let plan = Plan::from(args, programs);
    let progress = progress_bar(plan.runs() as u64);
    // The bar is hidden when stderr is not a terminal (logs, CI): a line per
    // workload and round there instead.
    let log_lines = !std::io::stderr().is_terminal();
    let started = Instant::now();
    let mut results = Results::new();
    let mut rounds = Rounds::new();
    for round in 0..plan.rounds {
        for &workload in &plan.workloads {
            if log_lines {
                eprintln!(
                    "cbench: round {}/{}: {} ({:.0} s elapsed)",
                    round + 1,
                    plan.rounds,
                    WORKLOADS[workload],
                    started.elapsed().as_secs_f64()
                );
            }
            for &threads in &plan.threads {
                for system in plan.systems(threads, round) {
                    progress.set_message(format!(
                        "round {} {} {} x{threads}",
                        round + 1,
                        WORKLOADS[workload],
                        SYSTEMS[system]
                    ));
                    let measured = run_one(
                        programs,
                        SYSTEMS[system],
                        WORKLOADS[workload],
                        threads,
                        plan.millis,
                    )?;
                    rounds
                        .entry((workload, system, threads))
                        .or_default()
                        .push(measured.throughput());
                    let best = results
                        .entry((workload, system, threads))
                        .or_insert(measured);
                    if measured.throughput() > best.throughput() {
                        *best = measured;
                    }
                    progress.inc(1);
                }
            }
        }
    }
    progress.finish_and_clear();
    let path = args
        .csv
        .clone()
        .unwrap_or_else(|| lutra_bench::harness::csv::default_csv_path("cbench"));
    table::report(&results, &rounds, &plan.workloads, &plan.threads, &path)
        .map_err(|error| format!("{}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_line_parses_and_a_failed_check_does_not() {
        let run = parse(
            "result system=lutra workload=bank64 threads=2 ops=1000 seconds=0.5 aborts=7 check=ok",
        )
        .expect("a valid line");
        assert_eq!((run.ops, run.aborts), (1000, Some(7)));
        assert!((run.throughput() - 2000.0).abs() < 1e-9);
        let unknown = parse("result ops=10 seconds=1 aborts=-1 check=ok").expect("valid");
        assert_eq!(unknown.aborts, None);
        assert!(parse("result ops=10 seconds=1 aborts=0 check=FAILED").is_none());
        assert!(parse("result ops=x seconds=1 aborts=0 check=ok").is_none());
    }

    #[test]
    fn the_sequential_build_stops_at_the_ceiling_the_floor_at_one_thread_and_the_order_rotates() {
        let plan = Plan {
            workloads: vec![0],
            threads: vec![1, 8, 64],
            millis: 1,
            rounds: 2,
            tinystm: false,
        };
        assert_eq!(plan.systems(1, 0), vec![0, 1, 2, 3, 4, 5, 6, 7, FLOOR]);
        assert_eq!(plan.systems(1, 1), vec![1, 2, 3, 4, 5, 6, 7, FLOOR, 0]);
        assert_eq!(plan.systems(1, 8), vec![FLOOR, 0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(plan.systems(8, 0), vec![0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(plan.systems(64, 0), vec![1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(plan.systems(64, 1), vec![2, 3, 4, 5, 6, 7, 1]);
        assert_eq!(plan.runs(), (9 + 8 + 7) * 2);
    }

    #[test]
    fn tinystm_runs_at_every_thread_count_only_when_built() {
        let plan = Plan {
            workloads: vec![0, 1],
            threads: vec![1, 2, 64],
            millis: 1,
            rounds: 1,
            tinystm: true,
        };
        assert_eq!(
            plan.systems(1, 0),
            vec![0, 1, 2, 3, 4, 5, 6, 7, FLOOR, TINYSTM]
        );
        assert_eq!(plan.systems(2, 0), vec![0, 1, 2, 3, 4, 5, 6, 7, TINYSTM]);
        assert_eq!(plan.systems(64, 0), vec![1, 2, 3, 4, 5, 6, 7, TINYSTM]);
        assert_eq!(plan.runs(), (10 + 9 + 8) * 2);
    }
}
