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
//! ```text
//! cargo run --release -p lutra-bench --bin gil                # ≈ 1.5 min (3 rounds)
//! cargo run --release -p lutra-bench --bin gil -- --quick     # ≈ 10 s
//! cargo run --release -p lutra-bench --bin gil -- --workloads conflict --threads 2 --repeat 3
//! ```

use clap::Parser;
use indicatif::ProgressBar;
use lutra_bench::fields;
use lutra_bench::harness::csv::{Csv, Fields, default_csv_path, optional};
use lutra_bench::harness::measure::{Run, timed};
use lutra_bench::harness::sweep::progress_bar;
use lutra_bench::harness::table::{GridLine, ratio, si, thread_headers, write_grid};
use lutra_elide::global::{
    AbortClass, Backend, FallbackCause, GilConfig, GilStats, GlobalLock, LengthPolicy, LiveThread,
    RandomAborts, Section, SiteStats, Step,
};
use lutra_stm::{Abort, Config, Stm, TVar};
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Steps per measured operation (one loop under the lock).
const CHUNK: u64 = 1024;
/// The conflict workload touches the shared counter every this many steps.
const HOT_EVERY: u64 = 256;
/// Elements of each thread's array (iterator).
const ITEMS: usize = 64;
/// The yield-point site of the loops' back edge.
const SITE: u32 = 1;

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

/// Samples kept by `--trace`: the profiling period (300 transactions of the site)
/// ends well within them.
const TRACE_POINTS: usize = 400;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Workload {
    While,
    Iterator,
    Conflict,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Self::While => "while",
            Self::Iterator => "iterator",
            Self::Conflict => "conflict",
        }
    }
}

/// One way of running the loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Contender {
    /// Plain memory, no lock (one thread only).
    NoLock,
    /// The global lock without elision.
    Lock,
    /// Elided, with a fixed length.
    Fixed(u32),
    /// Elided, with the dynamic length.
    Dynamic,
}

const LOCKED: [Contender; 5] = [
    Contender::Lock,
    Contender::Fixed(1),
    Contender::Fixed(16),
    Contender::Fixed(256),
    Contender::Dynamic,
];

impl Contender {
    fn label(self) -> String {
        match self {
            Self::NoLock => "no lock".into(),
            Self::Lock => "lock alone".into(),
            Self::Fixed(length) => format!("length {length}"),
            Self::Dynamic => "dynamic".into(),
        }
    }

    fn config(self) -> GilConfig {
        let config = GilConfig::default();
        match self {
            Self::NoLock | Self::Lock => config
                .with_elision(false)
                .with_length(LengthPolicy::Fixed(256)),
            Self::Fixed(length) => config.with_length(LengthPolicy::Fixed(length)),
            Self::Dynamic => config.with_length(LengthPolicy::DYNAMIC),
        }
    }
}

/// One thread's data.
struct Own {
    counter: TVar<u64>,
    position: TVar<u64>,
    sum: TVar<u64>,
    items: Vec<TVar<u64>>,
}

impl Own {
    fn new() -> Self {
        Self {
            counter: TVar::new(0),
            position: TVar::new(0),
            sum: TVar::new(0),
            items: (0..ITEMS as u64).map(TVar::new).collect(),
        }
    }
}

/// One step of `workload` on `own`; `done` counts the steps of the loop so far.
fn step(
    workload: Workload,
    section: &mut Section<'_>,
    own: &Own,
    hot: &TVar<u64>,
    done: u64,
) -> Result<(), Abort> {
    match workload {
        Workload::While => section.modify(&own.counter, |i| i + 1),
        Workload::Iterator => {
            let at = section.read(&own.position)?;
            let item = section.read(&own.items[at as usize % ITEMS])?;
            section.modify(&own.sum, |sum| sum + item)?;
            section.write(&own.position, at + 1)
        }
        Workload::Conflict => {
            if done.is_multiple_of(HOT_EVERY) {
                section.modify(hot, |n| n + 1)?;
            }
            section.modify(&own.counter, |i| i + 1)
        }
    }
}

/// One measured operation: a loop of [`CHUNK`] steps under the lock.
fn chunk(me: &mut LiveThread, workload: Workload, own: &Own, hot: &TVar<u64>) {
    me.run_steps(SITE, 0u64, |section, done| {
        step(workload, section, own, hot, *done)?;
        *done += 1;
        Ok(if *done == CHUNK {
            Step::Done(())
        } else {
            Step::Continue
        })
    });
}

/// The same loop on plain memory.
struct PlainOwn {
    counter: u64,
    position: u64,
    sum: u64,
    hot: u64,
    items: [u64; ITEMS],
}

impl PlainOwn {
    fn new() -> Self {
        Self {
            counter: 0,
            position: 0,
            sum: 0,
            hot: 0,
            items: std::array::from_fn(|index| index as u64),
        }
    }
}

fn plain_chunk(workload: Workload, own: &mut PlainOwn) {
    for done in 0..CHUNK {
        let own = black_box(&mut *own);
        match workload {
            Workload::While => own.counter += 1,
            Workload::Iterator => {
                own.sum += own.items[own.position as usize % ITEMS];
                own.position += 1;
            }
            Workload::Conflict => {
                if done.is_multiple_of(HOT_EVERY) {
                    own.hot += 1;
                }
                own.counter += 1;
            }
        }
    }
}

/// What one run measured.
#[derive(Clone, Debug, Default)]
struct Sample {
    run: Run,
    stats: Option<GilStats>,
    /// Processor time the process got during the run (Linux only).
    cpu: Option<Duration>,
}

impl Sample {
    /// Processors the run kept busy on average: below the thread count when other
    /// processes share the machine.
    fn cores_used(&self) -> Option<f64> {
        Some(self.cpu?.as_secs_f64() / self.run.elapsed.as_secs_f64().max(1e-9))
    }

    fn steps_per_sec(&self) -> f64 {
        self.run.throughput() * CHUNK as f64
    }

    fn total(&self) -> Option<SiteStats> {
        self.stats.as_ref().map(|stats| stats.total)
    }
}

/// A measurement: which run, and the kept sample.
#[derive(Clone, Debug)]
struct Row {
    workload: Workload,
    contender: Contender,
    threads: usize,
    idle: bool,
    sample: Sample,
}

struct Bench {
    backend: String,
    duration: Duration,
    repeat: usize,
}

impl Bench {
    fn backend(&self) -> Backend {
        match self.backend.as_str() {
            "fake" => Backend::fake(RandomAborts::new(2, 0x5eed)),
            // SAFETY: the benchmark's variables are only accessed inside the lock's
            // sections while they run (conservation is checked after the run).
            "rtm" => unsafe { Backend::rtm() }.unwrap_or_else(|| {
                eprintln!("this processor has no RTM");
                std::process::exit(2)
            }),
            _ => Backend::stm(),
        }
    }

    /// `--trace`: a run of `workload` with the dynamic length at `threads` threads, the
    /// loop site's statistics sampled (with the time since the start) after each loop
    /// of the first thread, up to [`TRACE_POINTS`].
    fn trace(&self, workload: Workload, threads: usize) -> Vec<(Duration, SiteStats)> {
        let stm = Stm::new(Config::default().with_stats(false));
        let gil = GlobalLock::with_backend(&stm, Contender::Dynamic.config(), self.backend());
        let hot = TVar::new(0u64);
        let owned: Mutex<Vec<Arc<Own>>> = Mutex::default();
        let samples = Mutex::new(Vec::with_capacity(TRACE_POINTS));
        let start = std::time::Instant::now();
        let run = timed(
            threads,
            self.duration,
            |index| {
                let own = Arc::new(Own::new());
                owned
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(own.clone());
                (gil.register().expect("a descriptor"), own, index == 0)
            },
            |(me, own, tracer)| {
                chunk(me, workload, own, &hot);
                let mut samples = samples.lock().unwrap_or_else(PoisonError::into_inner);
                if *tracer
                    && samples.len() < TRACE_POINTS
                    && let Some(site) = gil.stats().by_site.get(&SITE)
                {
                    samples.push((start.elapsed(), *site));
                }
            },
        );
        let owned = owned.into_inner().unwrap_or_else(PoisonError::into_inner);
        check_conservation(workload, &stm, &owned, &hot, run.ops * CHUNK);
        samples.into_inner().unwrap_or_else(PoisonError::into_inner)
    }

    /// Measures each of `runs` (contender, idle thread) at `threads` threads,
    /// `repeat` rounds interleaved (every contender once per round, so that a change in
    /// the machine's load hits them alike), and keeps each one's median.
    fn measure(
        &self,
        workload: Workload,
        runs: &[(Contender, bool)],
        threads: usize,
        progress: &ProgressBar,
    ) -> Vec<Row> {
        let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); runs.len()];
        for round in 0..self.repeat.max(1) {
            for (index, &(contender, idle)) in runs.iter().enumerate() {
                progress.set_message(format!(
                    "{} · {} · {threads} threads · round {}",
                    workload.name(),
                    contender.label(),
                    round + 1
                ));
                samples[index].push(self.measure_once(workload, contender, threads, idle));
                progress.inc(1);
            }
        }
        runs.iter()
            .zip(samples)
            .map(|(&(contender, idle), mut samples)| {
                samples.sort_by(|a, b| a.steps_per_sec().total_cmp(&b.steps_per_sec()));
                Row {
                    workload,
                    contender,
                    threads,
                    idle,
                    sample: samples.swap_remove(samples.len() / 2),
                }
            })
            .collect()
    }

    fn measure_once(
        &self,
        workload: Workload,
        contender: Contender,
        threads: usize,
        idle: bool,
    ) -> Sample {
        let before = process_cpu_time();
        if contender == Contender::NoLock {
            let run = timed(
                threads,
                self.duration,
                |_| PlainOwn::new(),
                |own| plain_chunk(workload, own),
            );
            let cpu = cpu_since(before);
            return Sample {
                run,
                stats: None,
                cpu,
            };
        }
        let stm = Stm::new(Config::default().with_stats(false));
        let gil = GlobalLock::with_backend(&stm, contender.config(), self.backend());
        let hot = TVar::new(0u64);
        let owned: Mutex<Vec<Arc<Own>>> = Mutex::default();
        let idle_thread = idle.then(|| gil.register().expect("a descriptor"));
        let run = timed(
            threads,
            self.duration,
            |_| {
                let own = Arc::new(Own::new());
                owned
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(own.clone());
                (gil.register().expect("a descriptor"), own)
            },
            |(me, own)| chunk(me, workload, own, &hot),
        );
        drop(idle_thread);
        let owned = owned.into_inner().unwrap_or_else(PoisonError::into_inner);
        check_conservation(workload, &stm, &owned, &hot, run.ops * CHUNK);
        Sample {
            run,
            stats: Some(gil.stats()),
            cpu: cpu_since(before),
        }
    }
}

/// User and system time of this process so far, from `/proc/self/stat` (in clock
/// ticks, taken as 100 per second, Linux's value on x86-64); `None` elsewhere.
fn process_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may contain spaces) start at the state.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

fn cpu_since(before: Option<Duration>) -> Option<Duration> {
    Some(process_cpu_time()?.saturating_sub(before?))
}

/// Every step counted left its trace exactly once.
fn check_conservation(
    workload: Workload,
    stm: &Stm,
    owned: &[Arc<Own>],
    hot: &TVar<u64>,
    steps: u64,
) {
    let (traces, shared) = stm.atomically(|tx| {
        let mut traces = 0;
        for own in owned {
            traces += match workload {
                Workload::Iterator => tx.read(&own.position)?,
                Workload::While | Workload::Conflict => tx.read(&own.counter)?,
            };
        }
        Ok((traces, tx.read(hot)?))
    });
    assert_eq!(traces, steps, "{}: steps lost or repeated", workload.name());
    if workload == Workload::Conflict {
        assert_eq!(shared, steps / HOT_EVERY, "conflict: shared counter");
    }
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

fn find(rows: &[Row], contender: Contender, threads: usize) -> Option<&Row> {
    rows.iter()
        .find(|row| row.contender == contender && row.threads == threads)
}

/// One workload: steps/s, ratio to the lock alone, aborts and fallbacks (counts), the
/// dynamic lengths reached.
fn grid_table(workload: Workload, backend: &str, rows: &[Row], threads: &[usize]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "== {} · {backend} backend · {CHUNK} steps per loop · threads →",
        workload.name()
    );
    let headers = thread_headers(threads);
    let cells = |contender: Contender, cell: &dyn Fn(&Row) -> String| -> GridLine {
        let cells = threads
            .iter()
            .map(|&count| find(rows, contender, count).map_or(String::new(), cell))
            .collect();
        (contender.label(), cells)
    };
    let throughput: Vec<GridLine> = LOCKED
        .iter()
        .map(|&contender| cells(contender, &|row| si(row.sample.steps_per_sec())))
        .collect();
    write_grid(&mut out, "steps/s", &headers, &throughput);
    let versus_lock: Vec<GridLine> = LOCKED[1..]
        .iter()
        .map(|&contender| {
            cells(contender, &|row| {
                let lock = find(rows, Contender::Lock, row.threads);
                ratio(lock.map(|lock| row.sample.steps_per_sec() / lock.sample.steps_per_sec()))
            })
        })
        .collect();
    write_grid(&mut out, "÷ lock alone", &headers, &versus_lock);
    let best: Vec<String> = threads
        .iter()
        .map(|&count| {
            let best_fixed = LOCKED[1..4]
                .iter()
                .filter_map(|&contender| find(rows, contender, count))
                .map(|row| row.sample.steps_per_sec())
                .fold(0.0, f64::max);
            let dynamic = find(rows, Contender::Dynamic, count);
            ratio(dynamic.map(|row| row.sample.steps_per_sec() / best_fixed))
        })
        .collect();
    write_grid(
        &mut out,
        "dynamic ÷ best fixed",
        &headers,
        &[("".into(), best)],
    );
    for (corner, count) in [
        ("aborts", SiteStats::total_aborts as fn(&SiteStats) -> u64),
        ("fallbacks", SiteStats::fallbacks),
    ] {
        let lines: Vec<GridLine> = LOCKED
            .iter()
            .map(|&contender| {
                cells(contender, &|row| {
                    row.sample
                        .total()
                        .map_or(String::new(), |total| counted(count(&total)))
                })
            })
            .collect();
        write_grid(&mut out, corner, &headers, &lines);
    }
    let transactions: Vec<GridLine> = LOCKED
        .iter()
        .map(|&contender| {
            cells(contender, &|row| {
                row.sample
                    .total()
                    .map_or(String::new(), |total| counted(total.transactions))
            })
        })
        .collect();
    write_grid(&mut out, "transactions", &headers, &transactions);
    let cores: Vec<GridLine> = LOCKED
        .iter()
        .map(|&contender| {
            cells(contender, &|row| {
                row.sample
                    .cores_used()
                    .map_or(String::new(), |cores| format!("{cores:.2}"))
            })
        })
        .collect();
    write_grid(&mut out, "cores used", &headers, &cores);
    let lengths = cells(Contender::Dynamic, &|row| {
        row.sample
            .stats
            .as_ref()
            .and_then(|stats| stats.by_site.get(&SITE))
            .map_or(String::new(), |site| site.length.to_string())
    });
    write_grid(&mut out, "dynamic length", &headers, &[lengths]);
    out
}

/// A count: exact below 10 000, then with an SI suffix.
fn counted(n: u64) -> String {
    lutra_bench::harness::table::count(n, 10_000)
}

/// One running thread: steps/s per workload and the ratio to no lock at all.
fn single_table(workloads: &[Workload], rows: &[Row]) -> String {
    let mut out = String::from("== single thread · steps/s and ÷ no lock\n");
    let mut headers = Vec::new();
    for workload in workloads {
        headers.push(workload.name().to_string());
        headers.push("÷ none".to_string());
    }
    let mut labels: Vec<(Contender, bool)> = Vec::new();
    for row in rows {
        if !labels.contains(&(row.contender, row.idle)) {
            labels.push((row.contender, row.idle));
        }
    }
    let lines: Vec<GridLine> = labels
        .iter()
        .map(|&(contender, idle)| {
            let mut cells = Vec::new();
            for &workload in workloads {
                let mine = rows.iter().find(|row| {
                    row.workload == workload && row.contender == contender && row.idle == idle
                });
                let none = rows
                    .iter()
                    .find(|row| row.workload == workload && row.contender == Contender::NoLock);
                cells.push(mine.map_or(String::new(), |row| si(row.sample.steps_per_sec())));
                cells.push(ratio(mine.zip(none).map(|(mine, none)| {
                    mine.sample.steps_per_sec() / none.sample.steps_per_sec()
                })));
            }
            let label = match (contender, idle) {
                (Contender::Lock, _) => "lock (1 live)".to_string(),
                (_, true) => format!("{} +idle", contender.label()),
                _ => contender.label(),
            };
            (label, cells)
        })
        .collect();
    write_grid(&mut out, "1 running thread", &headers, &lines);
    out
}

/// The trace's transactions at which the length changed, and the last sample.
fn trace_table(workload: Workload, threads: usize, points: &[(Duration, SiteStats)]) -> String {
    let mut out = format!(
        "== dynamic length of the loop site over its transactions ({}, {threads} threads)\n",
        workload.name()
    );
    let mut last = None;
    for (at, (elapsed, site)) in points.iter().enumerate() {
        if last != Some(site.length) || at + 1 == points.len() {
            let _ = writeln!(
                out,
                "{:>10.3} ms  {:>8} transactions  {:>6} aborts  length {}",
                elapsed.as_secs_f64() * 1e3,
                site.transactions,
                site.total_aborts(),
                site.length
            );
            last = Some(site.length);
        }
    }
    out
}

/// A `--trace` sample as a CSV row (`bench` = `gil-trace`, `idle_thread` = `trace`,
/// `seconds` since the start; the counters are the site's).
fn trace_record(
    workload: Workload,
    backend: &str,
    threads: usize,
    (elapsed, site): &(Duration, SiteStats),
) -> Fields {
    let mut fields = fields![
        "gil-trace",
        workload.name(),
        backend,
        "dynamic",
        "dynamic",
        threads,
        "trace",
        site.steps,
        format!("{:.6}", elapsed.as_secs_f64()),
        "",
        "",
    ];
    fields.extend(site_fields(site, site.steps));
    fields.extend(fields![site.length, ""]);
    fields
}

/// A site's counters as the columns from `transactions` to the fallbacks by cause.
fn site_fields(site: &SiteStats, committed_steps: u64) -> Fields {
    let mut fields = fields![site.transactions, site.speculative_commits, committed_steps];
    fields.extend(
        AbortClass::ALL
            .iter()
            .map(|&class| site.aborts_of(class).to_string()),
    );
    fields.extend(
        FallbackCause::ALL
            .iter()
            .map(|&cause| site.fallbacks_for(cause).to_string()),
    );
    fields
}

fn csv_header() -> String {
    let mut header = String::from(
        "bench,workload,backend,contender,length,threads,idle_thread,steps,seconds,steps_per_sec,\
         vs_lock,transactions,speculative_commits,committed_steps",
    );
    for class in AbortClass::ALL {
        let _ = write!(header, ",aborts_{}", class.name());
    }
    for cause in FallbackCause::ALL {
        let _ = write!(header, ",fallbacks_{}", cause.name());
    }
    header.push_str(",dynamic_length,cpu_seconds");
    header
}

fn csv_record(row: &Row, backend: &str, rows: &[Row]) -> Fields {
    let sample = &row.sample;
    let length = match row.contender {
        Contender::NoLock => String::new(),
        Contender::Lock => "256".into(),
        Contender::Fixed(length) => length.to_string(),
        Contender::Dynamic => "dynamic".into(),
    };
    let vs_lock = find(rows, Contender::Lock, row.threads)
        .filter(|lock| !row.idle && lock.workload == row.workload)
        .map(|lock| sample.steps_per_sec() / lock.sample.steps_per_sec());
    let mut fields = fields![
        "gil",
        row.workload.name(),
        backend,
        row.contender.label(),
        length,
        row.threads,
        u8::from(row.idle),
        sample.run.ops * CHUNK,
        format!("{:.6}", sample.run.elapsed.as_secs_f64()),
        format!("{:.1}", sample.steps_per_sec()),
        optional(vs_lock, 4),
    ];
    let total = sample.total().unwrap_or_default();
    fields.extend(site_fields(&total, total.steps));
    let dynamic = sample
        .stats
        .as_ref()
        .filter(|_| row.contender == Contender::Dynamic)
        .and_then(|stats| stats.by_site.get(&SITE))
        .map_or(String::new(), |site| site.length.to_string());
    let cpu = optional(sample.cpu.map(|cpu| cpu.as_secs_f64()), 3);
    fields.extend([dynamic, cpu]);
    fields
}
