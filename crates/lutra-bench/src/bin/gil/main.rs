//! Seed 000's micro-benchmarks on the elided global lock (`lutra_elide::global`): each
//! thread loops over its own data in small steps under one global lock.
//!
//! - `while`: a while loop; each step increments the thread's counter (the paper's
//!   While: little work between yield points, so transaction begin and end weigh).
//! - `iterator`: an iterator calling a block; each step reads the position, reads an
//!   element of the thread's array, adds it to an accumulator and advances (the
//!   paper's Iterator: a method call per step, more work between yield points).
//! - `conflict`: `while`, plus an increment of one shared counter every 256 steps:
//!   real conflicts, under which long fixed lengths collapse into fallbacks.
//!
//! Contenders: the lock alone (elision off; the holder passes 256 yield points before
//! it releases, like a GIL), fixed lengths 1, 16, 256, and the dynamic length, at each
//! thread count; with one thread the lock takes its single-thread shortcut. The
//! single-thread block compares, at one running thread, no lock at all (plain memory),
//! the shortcut, and each length with a second, idle thread registered (so
//! transactions run: the paper's "1 thread" beside "main thread only").
//!
//! Every run checks conservation afterwards (counters, positions and the shared
//! counter match the steps counted). Aborts and fallbacks are reported as counts, and
//! the processors a run kept busy ("cores used": process CPU time ÷ elapsed time) show
//! how much parallelism the machine actually gave it: a shared, loaded machine gives
//! two threads less than two cores, and then no transaction can beat the lock by
//! running in parallel.
//!
//! Files: `main.rs` (options, the order of runs), `run.rs` (the contenders and one
//! measured run of the loops in `lutra_bench::workloads::gil_loops`), `report.rs`
//! (tables and CSV).
//!
//! ```text
//! cargo run --release -p lutra-bench --bin gil                # ≈ 1.5 min (3 rounds)
//! cargo run --release -p lutra-bench --bin gil -- --quick     # ≈ 10 s
//! cargo run --release -p lutra-bench --bin gil -- --workloads conflict --threads 2 --repeat 3
//! ```

mod report;
mod run;

use clap::Parser;
use lutra_bench::harness::csv::{Csv, default_csv_path};
use lutra_bench::harness::sweep::progress_bar;
use lutra_bench::workloads::gil_loops::GilLoop as Workload;
use report::{csv_header, csv_record, grid_table, single_table, trace_record, trace_table};
use run::{Bench, Contender, LOCKED};
use std::path::PathBuf;
use std::time::Duration;

/// Seed 000's While and Iterator micro-benchmarks on the elided global lock.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Workloads, comma-separated.
    #[arg(long, value_delimiter = ',', default_values = ["while", "iterator", "conflict"])]
    workloads: Vec<Workload>,
    /// Thread counts, comma-separated [default: 1,2,4,8; --quick: 1,2,4].
    #[arg(long, value_delimiter = ',')]
    threads: Option<Vec<usize>>,
    /// Milliseconds per run [default: 300; --quick: 100].
    #[arg(long)]
    duration_ms: Option<u64>,
    /// Rounds per measurement, contenders interleaved; the median is kept
    /// [default: 3; --quick: 1].
    #[arg(long)]
    repeat: Option<usize>,
    /// Speculation backend: stm, or fake (software transactions with 2% injected
    /// aborts), or rtm (only where the processor has it).
    #[arg(long, default_value = "stm")]
    backend: String,
    /// Where to write the CSV file [default: target/bench/gil.csv].
    #[arg(long)]
    csv: Option<PathBuf>,
    /// A fast smoke run: fewer thread counts, shorter runs.
    #[arg(long)]
    quick: bool,
    /// Also trace how the loop site's dynamic length adapts: one more run of the
    /// conflict workload (or the first one given) at 2 threads (or the first count
    /// given), sampling the site after each loop of the first thread; rows with
    /// `bench` = `gil-trace` in the CSV.
    #[arg(long)]
    trace: bool,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let threads = {
        let default: &[usize] = if args.quick {
            &[1, 2, 4]
        } else {
            &[1, 2, 4, 8]
        };
        let mut counts = args.threads.clone().unwrap_or_else(|| default.to_vec());
        counts.retain(|&count| count > 0);
        counts.sort_unstable();
        counts.dedup();
        counts
    };
    let bench = Bench {
        backend: args.backend.clone(),
        duration: Duration::from_millis(args.duration_ms.unwrap_or(if args.quick {
            100
        } else {
            300
        })),
        repeat: args.repeat.unwrap_or(if args.quick { 1 } else { 3 }),
    };
    let singles = [
        (Contender::NoLock, false),
        (Contender::Lock, false),
        (Contender::Fixed(1), true),
        (Contender::Fixed(16), true),
        (Contender::Fixed(256), true),
        (Contender::Dynamic, true),
    ];
    let locked: Vec<(Contender, bool)> =
        LOCKED.iter().map(|&contender| (contender, false)).collect();
    let runs = args.workloads.len() * (LOCKED.len() * threads.len() + singles.len());
    let progress = progress_bar((runs * bench.repeat.max(1)) as u64);
    let csv_path = args.csv.clone().unwrap_or_else(|| default_csv_path("gil"));
    let mut csv = Csv::with_header(&csv_path, &csv_header())?;
    let mut single_rows = Vec::new();
    for &workload in &args.workloads {
        let mut rows = Vec::new();
        for &count in &threads {
            rows.extend(bench.measure(workload, &locked, count, &progress));
        }
        single_rows.extend(bench.measure(workload, &singles, 1, &progress));
        progress.suspend(|| println!("{}", grid_table(workload, &bench.backend, &rows, &threads)));
        csv.write_records(
            rows.iter()
                .map(|row| csv_record(row, &bench.backend, &rows)),
        )?;
    }
    progress.finish_and_clear();
    println!("{}", single_table(&args.workloads, &single_rows));
    csv.write_records(
        single_rows
            .iter()
            .map(|row| csv_record(row, &bench.backend, &single_rows)),
    )?;
    if args.trace {
        let workload = if args.workloads.contains(&Workload::Conflict) {
            Workload::Conflict
        } else {
            args.workloads[0]
        };
        let count = if threads.contains(&2) {
            2
        } else {
            threads.first().copied().unwrap_or(1)
        };
        let points = bench.trace(workload, count);
        println!("{}", trace_table(workload, count, &points));
        csv.write_records(
            points
                .iter()
                .map(|point| trace_record(workload, &bench.backend, count, point)),
        )?;
    }
    eprintln!(
        "{runs} measurements of {:?} each; CSV written to {}",
        bench.duration,
        csv.path().display()
    );
    Ok(())
}
