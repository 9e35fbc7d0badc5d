//! The contenders of the loops (no lock, the lock alone, fixed and dynamic lengths)
//! and one measured run: rounds interleaved, the median kept, conservation checked,
//! the processor time the run got.

use indicatif::ProgressBar;
use lutra_bench::harness::measure::{Run, timed};
use lutra_bench::workloads::gil_loops::{
    CHUNK, GilLoop as Workload, Owned, PlainOwn, SITE, chunk, plain_chunk,
};
use lutra_elide::global::{
    Backend, GilConfig, GilStats, GlobalLock, LengthPolicy, RandomAborts, SiteStats,
};
use lutra_stm::{Config, Stm};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// Samples kept by `--trace`: the profiling period (300 transactions of the site)
/// ends well within them.
const TRACE_POINTS: usize = 400;

/// One way of running the loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Contender {
    /// Plain memory, no lock (one thread only).
    NoLock,
    /// The global lock without elision.
    Lock,
    /// Elided, with a fixed length.
    Fixed(u32),
    /// Elided, with the dynamic length.
    Dynamic,
}

pub(crate) const LOCKED: [Contender; 5] = [
    Contender::Lock,
    Contender::Fixed(1),
    Contender::Fixed(16),
    Contender::Fixed(256),
    Contender::Dynamic,
];

impl Contender {
    pub(crate) fn label(self) -> String {
        match self {
            Self::NoLock => "no lock".into(),
            Self::Lock => "lock alone".into(),
            Self::Fixed(length) => format!("length {length}"),
            Self::Dynamic => "dynamic".into(),
        }
    }

    pub(crate) fn config(self) -> GilConfig {
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

/// What one run measured.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sample {
    pub(crate) run: Run,
    pub(crate) stats: Option<GilStats>,
    /// Processor time the process got during the run (Linux only).
    pub(crate) cpu: Option<Duration>,
}

impl Sample {
    /// Processors the run kept busy on average: below the thread count when other
    /// processes share the machine.
    pub(crate) fn cores_used(&self) -> Option<f64> {
        Some(self.cpu?.as_secs_f64() / self.run.elapsed.as_secs_f64().max(1e-9))
    }

    pub(crate) fn steps_per_sec(&self) -> f64 {
        self.run.throughput() * CHUNK as f64
    }

    pub(crate) fn total(&self) -> Option<SiteStats> {
        self.stats.as_ref().map(|stats| stats.total)
    }
}

/// A measurement: which run, and the kept sample.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub(crate) workload: Workload,
    pub(crate) contender: Contender,
    pub(crate) threads: usize,
    pub(crate) idle: bool,
    pub(crate) sample: Sample,
}

pub(crate) struct Bench {
    pub(crate) backend: String,
    pub(crate) duration: Duration,
    pub(crate) repeat: usize,
}

impl Bench {
    pub(crate) fn backend(&self) -> Backend {
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
    pub(crate) fn trace(&self, workload: Workload, threads: usize) -> Vec<(Duration, SiteStats)> {
        let stm = Stm::new(Config::default().with_stats(false));
        let gil = GlobalLock::with_backend(&stm, Contender::Dynamic.config(), self.backend());
        let owned = Owned::default();
        let samples = Mutex::new(Vec::with_capacity(TRACE_POINTS));
        let start = std::time::Instant::now();
        let run = timed(
            threads,
            self.duration,
            |index| {
                (
                    gil.register().expect("a descriptor"),
                    owned.add(),
                    index == 0,
                )
            },
            |(me, own, tracer)| {
                chunk(me, workload, own, owned.hot());
                let mut samples = samples.lock().unwrap_or_else(PoisonError::into_inner);
                if *tracer
                    && samples.len() < TRACE_POINTS
                    && let Some(site) = gil.stats().by_site.get(&SITE)
                {
                    samples.push((start.elapsed(), *site));
                }
            },
        );
        owned.check_conservation(workload, &stm, run.ops * CHUNK);
        samples.into_inner().unwrap_or_else(PoisonError::into_inner)
    }

    /// Measures each of `runs` (contender, idle thread) at `threads` threads,
    /// `repeat` rounds interleaved (every contender once per round, so that a change in
    /// the machine's load hits them alike), and keeps each one's median.
    pub(crate) fn measure(
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

    pub(crate) fn measure_once(
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
                |_| PlainOwn::default(),
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
        let owned = Owned::default();
        let idle_thread = idle.then(|| gil.register().expect("a descriptor"));
        let run = timed(
            threads,
            self.duration,
            |_| (gil.register().expect("a descriptor"), owned.add()),
            |(me, own)| chunk(me, workload, own, owned.hot()),
        );
        drop(idle_thread);
        owned.check_conservation(workload, &stm, run.ops * CHUNK);
        Sample {
            run,
            stats: Some(gil.stats()),
            cpu: cpu_since(before),
        }
    }
}

/// User and system time of this process so far, from `/proc/self/stat` (in clock
/// ticks, taken as 100 per second, Linux's value on x86-64); `None` elsewhere.
pub(crate) fn process_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may contain spaces) start at the state.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

pub(crate) fn cpu_since(before: Option<Duration>) -> Option<Duration> {
    Some(process_cpu_time()?.saturating_sub(before?))
}
