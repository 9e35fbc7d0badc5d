//! The oversubscription table and CSV lines.
//!
//! Derived figures, per group (one workload):
//!
//! | figure | definition |
//! |--------|------------|
//! | `vs_2` | throughput ÷ the same mode's throughput at [`STABILITY_BASE`] (2) threads; at 64 it is the stability figure (aim: ≥ 0.90 for tasks) |
//! | `vs_threads` | throughput ÷ plain threads' at the same count |
//! | `abort_rate` | aborted attempts ÷ started attempts |
//! | `wasted_ms` | the engine's time spent in attempts that aborted, wall-clock: for plain threads it includes the time an attempt sat preempted by the kernel, which is how preemption inside transactions shows (it can exceed the run's length × cores) |
//! | `switches` | the runtime's successful switches (LUTS's switch, TxLinux's descheduling), tasks only |

use super::scripted::ConflictScript;
use super::{Mode, OversubWorkload, SCRIPT_YIELD_EVERY, Setup};
use crate::harness::csv::{Fields, counters_fields, counters_header, optional, or_empty};
use crate::harness::measure::Sample;
use crate::harness::table::{GridLine, distinct, percent, ratio, si, thread_headers, write_grid};
use std::fmt::Write as _;

/// The thread count the stability figure divides by (one per core on the 2-core
/// machines of the seeds' comparison).
pub const STABILITY_BASE: usize = 2;

/// One run of one mode at one thread count.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// How the transactions ran.
    pub mode: Mode,
    /// The engine's contention manager (restart-profile installs its own).
    pub manager: &'static str,
    /// Threads or tasks.
    pub threads: usize,
    /// Operations, time, the engine's counters, the checked total.
    pub sample: Sample,
    /// The runtime's switches (tasks only).
    pub switches: Option<u64>,
}

impl Measurement {
    /// Operations per second.
    pub fn throughput(&self) -> f64 {
        self.sample.run.throughput()
    }

    /// Aborted attempts per started attempt.
    pub fn abort_rate(&self) -> Option<f64> {
        self.sample.stats.map(|stats| stats.abort_rate())
    }

    /// Time wasted in aborted attempts, in milliseconds.
    pub fn wasted_ms(&self) -> Option<f64> {
        self.sample
            .stats
            .map(|stats| stats.wasted.as_secs_f64() * 1e3)
    }
}

/// The runs of one workload.
#[derive(Clone, Debug)]
pub struct OversubGroup {
    /// `bank`, the structure's name, `pipeline` or `scripted`.
    pub workload: &'static str,
    /// Accounts, keys, words per phase, or transactions per task (scripted).
    pub size: usize,
    /// Percentage of updating operations.
    pub update_percent: u32,
    /// A title for the screen.
    pub title: String,
    /// The runs, in the order measured.
    pub rows: Vec<Measurement>,
}

/// The CSV header of the oversubscription benchmark.
pub fn csv_header() -> String {
    format!(
        "bench,workload,size,update_percent,threads,mode,policy,design,manager,workers,\
         yield_every,ops,seconds,ops_per_sec{},switches,final_total,vs_2,vs_threads",
        counters_header()
    )
}

impl OversubGroup {
    /// An empty group for `workload`.
    pub fn new(workload: &OversubWorkload) -> Self {
        Self {
            workload: workload.name(),
            size: workload.size(),
            update_percent: workload.update_percent(),
            title: workload.title(),
            rows: Vec::new(),
        }
    }

    /// An empty group for the scripted pattern.
    pub fn scripted(script: &ConflictScript) -> Self {
        Self {
            workload: "scripted",
            size: script.txs_per_task as usize,
            update_percent: 100,
            title: script.title(),
            rows: Vec::new(),
        }
    }

    fn row(&self, mode: Mode, threads: usize) -> Option<&Measurement> {
        self.rows
            .iter()
            .find(|row| row.mode == mode && row.threads == threads)
    }

    /// The distinct modes, in order of first appearance.
    fn modes(&self) -> Vec<Mode> {
        distinct(self.rows.iter().map(|row| row.mode))
    }

    /// `row`'s throughput ÷ the same mode's at [`STABILITY_BASE`] threads.
    pub fn vs_base(&self, row: &Measurement) -> Option<f64> {
        let base = self.row(row.mode, STABILITY_BASE)?;
        Some(row.throughput() / base.throughput())
    }

    /// `row`'s throughput ÷ plain threads' at the same count.
    pub fn vs_threads(&self, row: &Measurement) -> Option<f64> {
        let threads = self.row(Mode::Threads, row.threads)?;
        Some(row.throughput() / threads.throughput())
    }

    /// The stability figure of `mode`: its throughput at the largest count measured
    /// ÷ at [`STABILITY_BASE`] (`None` if either is missing, or they are the same).
    pub fn stability(&self, mode: Mode) -> Option<f64> {
        let largest = self
            .rows
            .iter()
            .filter(|row| row.mode == mode && row.threads > STABILITY_BASE)
            .max_by_key(|row| row.threads)?;
        self.vs_base(largest)
    }

    /// The group as a text table: throughput per mode and count with the stability
    /// column, then abort rates, switches and wasted time.
    pub fn table(&self, setup: &Setup, threads: &[usize]) -> String {
        let mut out = format!(
            "== {} — {}\n",
            self.title,
            describe(setup, setup.yield_every)
        );
        let largest = threads.iter().copied().max().unwrap_or(0);
        let stable = largest > STABILITY_BASE && threads.contains(&STABILITY_BASE);
        let mut headers = thread_headers(threads);
        if stable {
            headers.push(format!("{largest}/{STABILITY_BASE}"));
        }
        let stability = |mode| {
            if stable {
                vec![ratio(self.stability(mode))]
            } else {
                Vec::new()
            }
        };
        let lines = self.lines(threads, |row| Some(si(row.throughput())), stability);
        write_grid(&mut out, "ops/s", &headers, &lines);
        let headers = thread_headers(threads);
        let none = |_| Vec::new();
        let lines = self.lines(threads, |row| row.abort_rate().map(percent), none);
        write_grid(&mut out, "abort rate %", &headers, &lines);
        let lines = self.lines(threads, |row| row.switches.map(count), none);
        write_grid(&mut out, "switches", &headers, &lines);
        let wasted = |row: &Measurement| row.wasted_ms().map(|ms| format!("{ms:.1}"));
        write_grid(
            &mut out,
            "wasted ms",
            &headers,
            &self.lines(threads, wasted, none),
        );
        if self.workload == "pipeline" {
            let _ = writeln!(
                out,
                "TxLinux's configuration: 4 tasks per core = column {}",
                4 * setup.workers
            );
        }
        if stable {
            let _ = writeln!(
                out,
                "aim: tasks keep ≥ 0.90 of their {STABILITY_BASE}-thread throughput at \
                 {largest} (column {largest}/{STABILITY_BASE}); threads show what preemption \
                 costs"
            );
        }
        out
    }

    /// One line per mode: `cell` of each count's row, then `extra` cells.
    fn lines(
        &self,
        threads: &[usize],
        cell: impl Fn(&Measurement) -> Option<String>,
        extra: impl Fn(Mode) -> Vec<String>,
    ) -> Vec<GridLine> {
        self.modes()
            .into_iter()
            .map(|mode| {
                let mut cells: Vec<String> = threads
                    .iter()
                    .map(|&count| self.row(mode, count).and_then(&cell).unwrap_or_default())
                    .collect();
                cells.extend(extra(mode));
                (mode.label(), cells)
            })
            .collect()
    }

    /// The scripted group as a table of counts, one line per mode.
    pub fn counts_table(&self, setup: &Setup) -> String {
        let mut out = format!(
            "== {} — {}\n",
            self.title,
            describe(setup, SCRIPT_YIELD_EVERY)
        );
        let headers: Vec<String> = ["ms", "commits", "aborts", "abort %", "wasted", "switches"]
            .map(String::from)
            .to_vec();
        let lines: Vec<GridLine> = self
            .rows
            .iter()
            .map(|row| {
                let stats = row.sample.stats.unwrap_or_default();
                let cells = vec![
                    format!("{:.1}", row.sample.run.elapsed.as_secs_f64() * 1e3),
                    stats.commits.to_string(),
                    stats.total_aborts().to_string(),
                    percent(stats.abort_rate()),
                    format!("{:.2}", stats.wasted.as_secs_f64() * 1e3),
                    row.switches.map_or(String::new(), |n| n.to_string()),
                ];
                (row.mode.label(), cells)
            })
            .collect();
        write_grid(&mut out, "counts (times in ms)", &headers, &lines);
        out
    }

    /// One CSV line per row (fields as [`csv_header`]).
    pub fn csv_records(&self, setup: &Setup) -> Vec<Fields> {
        self.rows
            .iter()
            .map(|row| self.csv_record(setup, row))
            .collect()
    }

    fn csv_record(&self, setup: &Setup, row: &Measurement) -> Fields {
        let run = row.sample.run;
        let mut fields = crate::fields![
            "oversub",
            self.workload,
            self.size,
            self.update_percent,
            row.threads,
            row.mode.kind(),
            row.mode.policy_name(),
            setup.design.name(),
            row.manager,
            setup.workers,
            if row.mode == Mode::Threads {
                String::new()
            } else {
                setup.yield_every.to_string()
            },
            run.ops,
            format!("{:.6}", run.elapsed.as_secs_f64()),
            format!("{:.1}", row.throughput()),
        ];
        fields.extend(counters_fields(row.sample.stats.as_ref()));
        fields.extend([
            or_empty(row.switches),
            or_empty(row.sample.final_total),
            optional(self.vs_base(row), 4),
            optional(self.vs_threads(row), 4),
        ]);
        fields
    }
}

/// `950`, `12.3k`: exact below a thousand.
fn count(n: u64) -> String {
    crate::harness::table::count(n, 1000)
}

/// `wb-ctl/backoff · 2 workers · tasks yield every 8 ops`.
fn describe(setup: &Setup, yield_every: u32) -> String {
    format!(
        "{}/{} · {} workers · tasks yield every {yield_every} ops",
        setup.design.name(),
        setup.manager,
        setup.workers,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::measure::Run;
    use lutra_sched::policy::Policy;
    use lutra_stm::DesignKind;
    use std::time::Duration;

    fn row(mode: Mode, threads: usize, ops: u64) -> Measurement {
        Measurement {
            mode,
            manager: "backoff",
            threads,
            sample: Sample {
                run: Run {
                    ops,
                    elapsed: Duration::from_secs(1),
                },
                stats: Some(lutra_stm::Counters::default()),
                final_total: None,
            },
            switches: matches!(mode, Mode::Tasks(_)).then_some(7),
        }
    }

    #[test]
    fn stability_table_and_csv() {
        let tasks = Mode::Tasks(Policy::RoundRobin);
        let group = OversubGroup {
            workload: "bank",
            size: 64,
            update_percent: 95,
            title: "bank".into(),
            rows: vec![
                row(Mode::Threads, 2, 1000),
                row(Mode::Threads, 64, 500),
                row(tasks, 2, 800),
                row(tasks, 64, 760),
            ],
        };
        assert_eq!(group.stability(Mode::Threads), Some(0.5));
        assert_eq!(group.stability(tasks), Some(0.95));
        assert_eq!(group.vs_threads(&group.rows[3]), Some(1.52));
        let setup = Setup {
            design: DesignKind::WriteBackCtl,
            manager: "backoff",
            workers: 2,
            yield_every: 8,
        };
        let table = group.table(&setup, &[2, 64]);
        assert!(table.contains("64/2"), "{table}");
        assert!(table.contains("0.95"), "{table}");
        let header_fields = csv_header().split(',').count();
        let records = group.csv_records(&setup);
        for record in &records {
            assert_eq!(record.len(), header_fields, "{record:?}");
        }
        assert_eq!(
            records[3][..12].join(","),
            "oversub,bank,64,95,64,tasks,round-robin,wb-ctl,backoff,2,8,760"
        );
    }
}
