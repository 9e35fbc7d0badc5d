//! A benchmark sweep: every workload × contender × thread count, with a progress bar
//! on stderr, each workload's table on stdout as soon as it is complete, and every
//! run in a CSV file (written workload by workload, so an interrupted sweep keeps
//! what it measured).
//!
//! # Protocol (per workload)
//! 1. The sequential run, then the ceiling (the ratios of the later rows need them).
//! 2. The mutex, the rwlock, then each STM design × manager, at every thread count in
//!    increasing order (a fresh structure and engine per run).
//! 3. The table is printed and the rows appended to the CSV file.
//!
//! [`RunArgs`] (thread counts, run length, CSV path) and [`progress_bar`] serve the
//! `oversub` benchmark too, whose rows are execution modes rather than contenders.

use crate::harness::contender::{Contender, parse_design, parse_manager};
use crate::harness::csv::{Csv, default_csv_path};
use crate::harness::measure::Sample;
use crate::harness::report::{Group, Row};
use crate::workloads::bank::BankWorkload;
use crate::workloads::intset_workload::IntsetWorkload;
use indicatif::{ProgressBar, ProgressStyle};
use lutra_stm::{DesignKind, cm};
use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Thread counts of a full sweep.
pub const DEFAULT_THREADS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];
/// Thread counts with `--quick`.
pub const QUICK_THREADS: [usize; 4] = [1, 2, 8, 64];
/// Milliseconds per run of a full sweep.
pub const DEFAULT_DURATION_MS: u64 = 200;
/// Milliseconds per run with `--quick`.
pub const QUICK_DURATION_MS: u64 = 40;

/// The command-line options of every benchmark that sweeps thread counts: which
/// counts, how long each run lasts, where the CSV file goes.
#[derive(clap::Args, Clone, Debug)]
pub struct RunArgs {
    /// Thread counts, comma-separated [default: 1,2,4,8,16,32,64; --quick: 1,2,8,64].
    #[arg(long, value_delimiter = ',')]
    pub threads: Option<Vec<usize>>,
    /// Milliseconds per run [default: 200; --quick: 40].
    ///
    /// With many more threads than cores a run takes longer to wind down (every
    /// thread must be scheduled to see the stop flag); its elapsed time covers that.
    #[arg(long)]
    pub duration_ms: Option<u64>,
    /// Where to write the CSV file [default: target/bench/ + the benchmark's name + .csv].
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// A fast smoke sweep: fewer thread counts, shorter runs.
    #[arg(long)]
    pub quick: bool,
}

impl RunArgs {
    /// The thread counts to run, sorted, without duplicates.
    pub fn thread_counts(&self) -> Vec<usize> {
        let default: &[usize] = if self.quick {
            &QUICK_THREADS
        } else {
            &DEFAULT_THREADS
        };
        let mut counts = self.threads.clone().unwrap_or_else(|| default.to_vec());
        counts.retain(|&count| count > 0);
        counts.sort_unstable();
        counts.dedup();
        counts
    }

    /// The duration of each run.
    pub fn duration(&self) -> Duration {
        let default = if self.quick {
            QUICK_DURATION_MS
        } else {
            DEFAULT_DURATION_MS
        };
        Duration::from_millis(self.duration_ms.unwrap_or(default))
    }

    /// The CSV path for benchmark `name`.
    pub fn csv_path(&self, name: &str) -> PathBuf {
        self.csv.clone().unwrap_or_else(|| default_csv_path(name))
    }
}

/// The command-line options of the sweeps over contenders (`intset`, `bank`).
#[derive(clap::Args, Clone, Debug)]
pub struct SweepArgs {
    /// Thread counts, run length, CSV path.
    #[command(flatten)]
    pub run: RunArgs,
    /// STM designs, comma-separated (wb-ctl, wb-etl).
    #[arg(long, value_delimiter = ',', value_parser = parse_design, default_values = ["wb-ctl", "wb-etl"])]
    pub designs: Vec<DesignKind>,
    /// Contention managers, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_manager, default_values = cm::NAMES)]
    pub managers: Vec<&'static str>,
    /// Leave out the Mutex and RwLock baselines.
    #[arg(long)]
    pub no_locks: bool,
}

impl SweepArgs {
    /// The thread counts to run ([`RunArgs::thread_counts`]).
    pub fn thread_counts(&self) -> Vec<usize> {
        self.run.thread_counts()
    }

    /// The duration of each run ([`RunArgs::duration`]).
    pub fn duration(&self) -> Duration {
        self.run.duration()
    }

    /// The contenders to run.
    pub fn contenders(&self) -> Vec<Contender> {
        let mut contenders = Contender::sweep(&self.designs, &self.managers);
        if self.no_locks {
            contenders
                .retain(|contender| !matches!(contender, Contender::Mutex | Contender::RwLock));
        }
        contenders
    }

    /// The CSV path for benchmark `name` ([`RunArgs::csv_path`]).
    pub fn csv_path(&self, name: &str) -> PathBuf {
        self.run.csv_path(name)
    }
}

/// A workload of a sweep, as the report names it.
#[derive(Clone, Debug)]
pub struct Workload {
    /// The structure (`list`, …) or `bank`.
    pub structure: String,
    /// Initial keys, or accounts.
    pub size: usize,
    /// Percentage of updating operations.
    pub update_percent: u32,
    /// A title for the screen.
    pub title: String,
}

/// A workload a sweep can run: it says how the report names it and measures one run.
pub trait Swept {
    /// How the report and the CSV file name the workload.
    fn describe(&self) -> Workload;

    /// One run with `contender` on `threads` threads for `duration`.
    fn measure(&self, contender: Contender, threads: usize, duration: Duration) -> Sample;
}

impl Swept for BankWorkload {
    fn describe(&self) -> Workload {
        Workload {
            structure: "bank".into(),
            size: self.accounts,
            update_percent: self.update_percent(),
            title: format!(
                "bank · {} accounts · {}% audits",
                self.accounts, self.audit_percent
            ),
        }
    }

    fn measure(&self, contender: Contender, threads: usize, duration: Duration) -> Sample {
        BankWorkload::measure(self, contender, threads, duration)
    }
}

impl Swept for IntsetWorkload {
    fn describe(&self) -> Workload {
        Workload {
            structure: self.structure.name().to_string(),
            size: self.initial,
            update_percent: self.update_percent,
            title: format!(
                "intset {} · {} keys in 0..{} · {}% updates",
                self.structure.name(),
                self.initial,
                self.range(),
                self.update_percent
            ),
        }
    }

    fn measure(&self, contender: Contender, threads: usize, duration: Duration) -> Sample {
        IntsetWorkload::measure(self, contender, threads, duration)
    }
}

/// Runs the sweep of benchmark `bench` over `workloads` (see the module protocol).
/// Returns every group.
///
/// # Errors
/// An I/O error writing the CSV file.
///
/// # Panics
/// If a measurement panics (a failed audit, for example).
pub fn run(
    bench: &'static str,
    args: &SweepArgs,
    workloads: &[impl Swept],
) -> io::Result<Vec<Group>> {
    let threads = args.thread_counts();
    let contenders = args.contenders();
    let duration = args.duration();
    let mut csv = Csv::with_header(&args.csv_path(bench), &crate::harness::report::csv_header())?;
    let per_workload: usize = contenders
        .iter()
        .map(|contender| contender.thread_counts(&threads).len())
        .sum();
    let progress = progress_bar((workloads.len() * per_workload) as u64);
    let mut groups = Vec::new();
    for swept in workloads {
        let workload = swept.describe();
        let mut group = Group {
            bench,
            structure: workload.structure.clone(),
            size: workload.size,
            update_percent: workload.update_percent,
            title: workload.title.clone(),
            rows: Vec::new(),
        };
        for &contender in &contenders {
            for count in contender.thread_counts(&threads) {
                progress.set_message(format!(
                    "{} · {} · {count} threads",
                    workload.title,
                    contender.label()
                ));
                let sample = swept.measure(contender, count, duration);
                group.rows.push(Row {
                    contender,
                    threads: count,
                    sample,
                });
                progress.inc(1);
            }
        }
        progress.suspend(|| println!("{}", group.table(&threads)));
        csv.write_records(group.csv_records())?;
        groups.push(group);
    }
    progress.finish_and_clear();
    eprintln!(
        "{} runs of {:?} each; CSV written to {}",
        workloads.len() * per_workload,
        duration,
        csv.path().display()
    );
    Ok(groups)
}

/// A progress bar on stderr for `runs` runs.
pub fn progress_bar(runs: u64) -> ProgressBar {
    let progress = ProgressBar::new(runs);
    let style =
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} (eta {eta}) {msg}")
            .expect("the template is valid")
            .progress_chars("=> ");
    progress.set_style(style);
    progress
}
