//! The README's main command: a short bank run on the STM showing the engine at work.
//!
//! ```text
//! cargo run --release -p lutra-bench --bin demo
//! ```
//!
//! Threads 1, 2, 4, …, 64 on a few design / contention-manager combinations, printing
//! throughput, aborts by reason and the conserved total (≈ 7 s with the defaults).

use clap::Parser;
use lutra_bench::harness::contender::{Contender, parse_manager};
use lutra_bench::harness::measure::Sample;
use lutra_bench::harness::table::{TextTable, percent, si};
use lutra_bench::workloads::bank::{BankWorkload, OPENING_BALANCE};
use lutra_stm::{AbortReason, Counters, DesignKind};
use std::time::{Duration, Instant};

/// A short bank run on the Lutra STM.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Accounts (fewer accounts, more conflicts).
    #[arg(long, default_value_t = 64)]
    accounts: usize,
    /// Percentage of operations that are audits of every account.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(0..=100))]
    audit_percent: u32,
    /// Milliseconds per run.
    #[arg(long, default_value_t = 300)]
    duration_ms: u64,
    /// Largest thread count (the counts are the powers of two up to it).
    #[arg(long, default_value_t = 64)]
    max_threads: usize,
}

/// The combinations shown: the default, encounter-time locking with a waiting
/// manager, and the manager that kills.
const COMBOS: [(DesignKind, &str); 3] = [
    (DesignKind::WriteBackCtl, "backoff"),
    (DesignKind::WriteBackEtl, "timestamp"),
    (DesignKind::WriteBackEtl, "aggressive"),
];

fn main() {
    let args = Args::parse();
    let workload = BankWorkload {
        accounts: args.accounts.max(1),
        audit_percent: args.audit_percent,
    };
    let duration = Duration::from_millis(args.duration_ms);
    let threads: Vec<usize> = std::iter::successors(Some(1usize), |n| n.checked_mul(2))
        .take_while(|&n| n <= args.max_threads.max(1))
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let started = Instant::now();
    println!(
        "Lutra STM demo — bank of {} accounts ({} each), {}% audits, {:?} per run, {cores} cores",
        workload.accounts, OPENING_BALANCE, workload.audit_percent, duration
    );
    println!(
        "Every audit checks the total inside its transaction; every run ends with a final audit.\n"
    );
    let seq = workload.measure(Contender::Sequential, 1, duration);
    println!(
        "sequential, no synchronization: {} ops/s\n",
        si(seq.run.throughput())
    );
    for (design, manager) in COMBOS {
        let manager = parse_manager(manager).expect("demo managers exist");
        let contender = Contender::Stm { design, manager };
        println!("{}", contender.label());
        let table = run_table();
        print!("{}", table.header());
        for &count in &threads {
            let sample = workload.measure(contender, count, duration);
            print_run(&table, count, &sample, seq.run.throughput(), workload);
        }
        println!();
    }
    println!("done in {:.1?}", started.elapsed());
}

/// The columns of a design's runs, one line per thread count.
fn run_table() -> TextTable {
    TextTable::new(" ")
        .right("threads", 8)
        .right("ops/s", 9)
        .right("vs seq", 8)
        .right("commits", 10)
        .right("aborts", 9)
        .right("abort%", 7)
        .gap("  ")
        .left("aborts by reason", 58)
        .left("total", 0)
}

fn print_run(
    table: &TextTable,
    threads: usize,
    sample: &Sample,
    sequential: f64,
    workload: BankWorkload,
) {
    let stats = sample.stats.unwrap_or_default();
    let expected = OPENING_BALANCE * workload.accounts as i64;
    let total = sample.final_total.unwrap_or_default();
    let verdict = if total == expected {
        "conserved"
    } else {
        "WRONG"
    };
    let cells = [
        threads.to_string(),
        si(sample.run.throughput()),
        format!("{:.2}", sample.run.throughput() / sequential),
        stats.commits.to_string(),
        stats.total_aborts().to_string(),
        format!("{}%", percent(stats.abort_rate())),
        reasons(&stats),
        format!("{total} {verdict}"),
    ];
    print!("{}", table.line(&cells.each_ref().map(String::as_str), ""));
}

/// `validation=12 killed=3`, or `-`.
fn reasons(stats: &Counters) -> String {
    let parts: Vec<String> = AbortReason::ALL
        .into_iter()
        .filter(|&reason| stats.aborts_for(reason) > 0)
        .map(|reason| format!("{}={}", reason.name(), stats.aborts_for(reason)))
        .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(" ")
    }
}
