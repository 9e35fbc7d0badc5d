//! The cooperative-lock benchmark (seed 003, Section 4): one critical section in
//! twenty (by default) writes a line to `/dev/null` — I/O that must not be repeated —
//! and the rest update a few counters of a shared table. Compared, at each thread
//! count: a plain `std::sync::Mutex`, the cooperative lock used optimistically (a
//! section that reaches its I/O restarts exclusively), and the cooperative lock
//! taken exclusively every time (the lock alone, in the same engine).
//!
//! After every run the table's total and the number of lines written are checked
//! against the operations counted: each I/O happened exactly once.
//!
//! ```text
//! cargo run --release -p lutra-bench --bin coop
//! cargo run --release -p lutra-bench --bin coop -- --work 2000   # longer sections
//! cargo run --release -p lutra-bench --bin coop -- --io-percent 20 --threads 1,2
//! ```

use clap::Parser;
use lutra_bench::harness::csv::{Csv, counters_fields, counters_header, optional, or_empty};
use lutra_bench::harness::measure::{self, Run};
use lutra_bench::harness::sweep::{RunArgs, progress_bar};
use lutra_bench::harness::table::{GridLine, percent, ratio, si, thread_headers, write_grid};
use lutra_elide::coop::{CoopLock, CoopTx};
use lutra_stm::{AbortReason, Counters, Stm, TVar};
use std::fs::File;
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Optimistic cooperative lock against a plain mutex when some sections do I/O.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Percentage of critical sections that do I/O.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(0..=100))]
    io_percent: u32,
    /// Counters in the shared table (fewer: more conflicts).
    #[arg(long, default_value_t = 1024)]
    counters: usize,
    /// Counters each critical section updates.
    #[arg(long, default_value_t = 4)]
    touches: usize,
    /// Steps of computation inside each critical section (a longer section: the
    /// mutex serializes it, optimistic holders run it side by side).
    #[arg(long, default_value_t = 0)]
    work: u32,
    /// Thread counts [default: 1,2,4,8], run length [default: 300 ms], CSV path.
    #[command(flatten)]
    run: RunArgs,
}

/// The ways to protect the critical section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Contender {
    Mutex,
    Optimistic,
    Exclusive,
}

impl Contender {
    const ALL: [Contender; 3] = [Self::Mutex, Self::Optimistic, Self::Exclusive];

    fn name(self) -> &'static str {
        match self {
            Self::Mutex => "mutex",
            Self::Optimistic => "coop-optimistic",
            Self::Exclusive => "coop-exclusive",
        }
    }
}

/// One critical section's choices, drawn before it starts (a re-run repeats them).
struct Operation {
    slots: Vec<usize>,
    io: bool,
}

/// Per-thread state: its random numbers and its `/dev/null`.
struct Worker {
    rng: fastrand::Rng,
    sink: File,
    operation: Operation,
}

/// What one run measured and checked.
struct Outcome {
    run: Run,
    stats: Option<Counters>,
}

struct Bench<'a> {
    args: &'a Args,
    io_done: AtomicU64,
    io_asked: AtomicU64,
}

impl Bench<'_> {
    fn worker(&self, index: usize) -> Worker {
        Worker {
            rng: fastrand::Rng::with_seed(index as u64 + 1),
            sink: File::options()
                .write(true)
                .open("/dev/null")
                .expect("open /dev/null"),
            operation: Operation {
                slots: Vec::with_capacity(self.args.touches),
                io: false,
            },
        }
    }

    /// Draws the next operation into `worker.operation`.
    fn draw(&self, worker: &mut Worker) {
        let operation = &mut worker.operation;
        operation.slots.clear();
        for _ in 0..self.args.touches {
            operation.slots.push(worker.rng.usize(..self.args.counters));
        }
        operation.io = worker.rng.u32(..100) < self.args.io_percent;
        if operation.io {
            self.io_asked.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The section's computation: `work` steps of a linear congruential generator.
    fn compute(&self, seed: u64) -> u64 {
        (0..self.args.work).fold(seed, |acc, _| {
            acc.wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407)
        })
    }

    /// The I/O: a line to `/dev/null`, counted.
    fn write_line(&self, sink: &mut File, slot: usize) {
        writeln!(sink, "section touching counter {slot}").expect("write /dev/null");
        self.io_done.fetch_add(1, Ordering::Relaxed);
    }

    /// A timed run of `section` on `threads` threads, each drawing its next
    /// operation before every section.
    fn timed(
        &self,
        threads: usize,
        duration: Duration,
        section: impl Fn(&mut Worker) + Sync,
    ) -> Run {
        measure::timed(
            threads,
            duration,
            |i| self.worker(i),
            |worker| {
                self.draw(worker);
                section(worker);
            },
        )
    }

    fn mutex(&self, threads: usize, duration: Duration) -> Outcome {
        let table = Mutex::new(vec![0u64; self.args.counters]);
        let run = self.timed(threads, duration, |worker| {
            let mut table = table.lock().expect("no panics under the lock");
            for &slot in &worker.operation.slots {
                table[slot] += 1;
            }
            std::hint::black_box(self.compute(table[worker.operation.slots[0]]));
            if worker.operation.io {
                self.write_line(&mut worker.sink, worker.operation.slots[0]);
            }
        });
        let total: u64 = table.into_inner().expect("no panics").iter().sum();
        self.check(total, run);
        Outcome { run, stats: None }
    }

    fn coop(&self, threads: usize, duration: Duration, exclusive: bool) -> Outcome {
        let (stm, lock) = (Stm::default(), CoopLock::new());
        let table: Vec<TVar<u64>> = (0..self.args.counters).map(|_| TVar::new(0)).collect();
        let before = stm.stats().total;
        let run = self.timed(threads, duration, |worker| {
            let Worker {
                sink, operation, ..
            } = worker;
            let section = |tx: &mut lutra_stm::Transaction<'_>| {
                for &slot in &operation.slots {
                    tx.modify(&table[slot], |n| n + 1)?;
                }
                std::hint::black_box(self.compute(tx.read(&table[operation.slots[0]])?));
                if operation.io {
                    tx.io(|| self.write_line(sink, operation.slots[0]))?;
                }
                Ok(())
            };
            if exclusive {
                lock.exclusive(&stm, section);
            } else {
                lock.optimistic(&stm, section);
            }
        });
        let stats = measure::counters_since(&stm.stats().total, &before);
        let total = stm.atomically(|tx| table.iter().map(|var| tx.read(var)).sum());
        self.check(total, run);
        Outcome {
            run,
            stats: Some(stats),
        }
    }

    /// Every operation counted once in the table, every I/O asked done once.
    fn check(&self, total: u64, run: Run) {
        assert_eq!(total, run.ops * self.args.touches as u64, "lost updates");
        let (asked, done) = (
            self.io_asked.swap(0, Ordering::Relaxed),
            self.io_done.swap(0, Ordering::Relaxed),
        );
        assert_eq!(asked, done, "I/O repeated or lost");
    }
}

/// One measured run.
struct Row {
    contender: Contender,
    threads: usize,
    outcome: Outcome,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    assert!(
        args.counters > 0 && args.touches > 0,
        "counters and touches must be positive"
    );
    let threads = match &args.run.threads {
        Some(_) => args.run.thread_counts(),
        None => vec![1, 2, 4, 8],
    };
    let duration = args
        .run
        .duration_ms
        .map_or(Duration::from_millis(300), Duration::from_millis);
    let bench = Bench {
        args: &args,
        io_done: AtomicU64::new(0),
        io_asked: AtomicU64::new(0),
    };
    let progress = progress_bar((Contender::ALL.len() * threads.len()) as u64);
    let mut rows = Vec::new();
    for contender in Contender::ALL {
        for &count in &threads {
            progress.set_message(format!("{} × {count}", contender.name()));
            let outcome = match contender {
                Contender::Mutex => bench.mutex(count, duration),
                Contender::Optimistic => bench.coop(count, duration, false),
                Contender::Exclusive => bench.coop(count, duration, true),
            };
            rows.push(Row {
                contender,
                threads: count,
                outcome,
            });
            progress.inc(1);
        }
    }
    progress.finish_and_clear();
    print!("{}", table(&args, &threads, &rows));
    let path = args.run.csv_path("coop");
    write_csv(&path, &args, &rows)?;
    println!("CSV: {}", path.display());
    Ok(())
}

fn find(rows: &[Row], contender: Contender, threads: usize) -> Option<&Row> {
    rows.iter()
        .find(|row| row.contender == contender && row.threads == threads)
}

/// Exclusive restarts (sections that reached their I/O optimistically) per operation.
fn restart_fraction(row: &Row) -> Option<f64> {
    let stats = row.outcome.stats?;
    Some(stats.aborts_for(AbortReason::Irrevocable) as f64 / row.outcome.run.ops.max(1) as f64)
}

fn table(args: &Args, threads: &[usize], rows: &[Row]) -> String {
    let mut out = format!(
        "coop · {} counters · {} per section · {} work steps · {}% of sections do I/O\n",
        args.counters, args.touches, args.work, args.io_percent
    );
    let headers = thread_headers(threads);
    let cells = |cell: &dyn Fn(&Row) -> String| -> Vec<GridLine> {
        Contender::ALL
            .iter()
            .map(|&contender| {
                let line = threads
                    .iter()
                    .map(|&count| find(rows, contender, count).map_or(String::new(), cell))
                    .collect();
                (contender.name().to_owned(), line)
            })
            .collect()
    };
    write_grid(
        &mut out,
        "ops/s",
        &headers,
        &cells(&|row| si(row.outcome.run.throughput())),
    );
    let vs_mutex = |row: &Row| {
        ratio(
            find(rows, Contender::Mutex, row.threads)
                .map(|mutex| row.outcome.run.throughput() / mutex.outcome.run.throughput()),
        )
    };
    write_grid(&mut out, "÷ mutex", &headers, &cells(&vs_mutex));
    let aborts = |row: &Row| {
        row.outcome
            .stats
            .map_or(String::new(), |s| percent(s.abort_rate()))
    };
    write_grid(&mut out, "aborts % of attempts", &headers, &cells(&aborts));
    let restarts = |row: &Row| restart_fraction(row).map_or(String::new(), percent);
    write_grid(
        &mut out,
        "excl. restarts % ops",
        &headers,
        &cells(&restarts),
    );
    out
}

fn write_csv(path: &std::path::Path, args: &Args, rows: &[Row]) -> std::io::Result<()> {
    let header = format!(
        "bench,impl,threads,io_percent,counters,touches,work,ops,seconds,ops_per_sec,vs_mutex,\
         exclusive_restarts,irrevocable_commits{}",
        counters_header()
    );
    let mut csv = Csv::with_header(path, &header)?;
    csv.write_records(rows.iter().map(|row| {
        let run = row.outcome.run;
        let vs_mutex = find(rows, Contender::Mutex, row.threads)
            .map(|mutex| run.throughput() / mutex.outcome.run.throughput());
        let stats = row.outcome.stats;
        let mut fields = lutra_bench::fields![
            "coop",
            row.contender.name(),
            row.threads,
            args.io_percent,
            args.counters,
            args.touches,
            args.work,
            run.ops,
            format!("{:.6}", run.elapsed.as_secs_f64()),
            format!("{:.1}", run.throughput()),
            optional(vs_mutex, 4),
            or_empty(stats.map(|s| s.aborts_for(AbortReason::Irrevocable))),
            or_empty(stats.map(|s| s.irrevocable_commits)),
        ];
        fields.extend(counters_fields(stats.as_ref()));
        fields
    }))
}
