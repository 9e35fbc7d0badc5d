//! Oversubscription: more threads of work than cores, run as plain OS threads or as
//! the scheduler's tasks under each policy (seed 004's stability experiment; seed
//! 003's `pipeline`).
//!
//! | mode | what runs the transactions | engine |
//! |------|----------------------------|--------|
//! | `threads` | one OS thread per count, preempted by the kernel anywhere | no hooks, thread parking |
//! | `tasks/<policy>` | one task per count on one worker per core ([`Runner::Tasks`]) | the policy's hooks and task parking ([`Policy::configure`]) |
//!
//! Files: `mod.rs` (modes, engines, the workloads, the sweep), `report.rs` (table and
//! CSV), `scripted.rs` (a fixed conflict pattern compared by counts).
//!
//! # Protocol (the sweep, per workload)
//! 1. For each mode, at each thread count in increasing order: a fresh engine (and,
//!    for tasks, a fresh runtime, so the policy's state and the switch count start
//!    at zero), a fresh structure, one timed run.
//! 2. The table is printed and the rows appended to the CSV file.
//! 3. Last, the scripted conflict pattern, once per mode (see `scripted.rs`).
//!
//! The aim (seed 004): with 64 tasks on 2 cores, throughput at least 0.90 of the
//! 2-task figure; the `64/2` column shows it for every mode, plain threads included.

mod report;
mod scripted;

pub use report::{Measurement, OversubGroup, STABILITY_BASE, csv_header};
pub use scripted::{COLD_IDS, ConflictScript, HOT_IDS, SCRIPT_YIELD_EVERY};

use crate::harness::csv::Csv;
use crate::harness::measure::{Sample, counters_since};
use crate::harness::sweep::progress_bar;
use crate::harness::tasks::Runner;
use crate::workloads::bank::{BankWorkload, SharedBank, StmBank};
use crate::workloads::intset::{
    HashSet, IntSet, LinkedList, RbTree, SharedIntSet, SkipList, StmIntSet, Structure,
};
use crate::workloads::intset_workload::IntsetWorkload;
use crate::workloads::pipeline::{Pipeline, PipelineCursor, PipelineWorkload};
use crate::workloads::thread_rng;
use lutra_sched::Runtime;
use lutra_sched::policy::Policy;
use lutra_stm::{Config, DesignKind, Stm, TVar, cm};
use std::io;
use std::sync::Arc;
use std::time::Duration;

/// How a row's transactions run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Plain OS threads.
    Threads,
    /// Tasks on the scheduler, with this policy.
    Tasks(Policy),
}

impl Mode {
    /// `threads`, or `tasks/<policy>`.
    pub fn label(self) -> String {
        match self {
            Self::Threads => "threads".into(),
            Self::Tasks(policy) => format!("tasks/{policy}"),
        }
    }

    /// `threads` or `tasks` (the CSV's `mode` column).
    pub fn kind(self) -> &'static str {
        match self {
            Self::Threads => "threads",
            Self::Tasks(_) => "tasks",
        }
    }

    /// The policy's name, or `""` for threads.
    pub fn policy_name(self) -> &'static str {
        match self {
            Self::Threads => "",
            Self::Tasks(policy) => policy.name(),
        }
    }

    /// Plain threads, then tasks under each of `policies`.
    pub fn all(policies: &[Policy]) -> Vec<Mode> {
        std::iter::once(Self::Threads)
            .chain(policies.iter().map(|&policy| Self::Tasks(policy)))
            .collect()
    }
}

/// What every run of a comparison shares: the engine's design and manager, the
/// scheduler's workers, and how often tasks yield.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// The STM design.
    pub design: DesignKind,
    /// The contention manager (a name from [`cm::NAMES`]); restart-profile replaces
    /// it with `priority`, through which it acts.
    pub manager: &'static str,
    /// Workers of each runtime (one per core by default).
    pub workers: usize,
    /// Operations a task runs between two yields (see `tasks.rs`).
    pub yield_every: u32,
}

impl Setup {
    /// A fresh engine for `mode` (statistics on).
    ///
    /// # Panics
    /// If the manager's name is unknown.
    pub fn engine(&self, mode: Mode) -> Stm {
        let manager = cm::by_name(self.manager).expect("validated manager name");
        let config = Config::default()
            .with_design(self.design)
            .with_shared_manager(manager);
        Stm::new(match mode {
            Mode::Threads => config,
            Mode::Tasks(policy) => policy.configure(config, self.workers),
        })
    }

    /// A fresh runtime of `workers` pinned workers.
    pub fn runtime(&self) -> Runtime {
        Runtime::builder()
            .workers(self.workers)
            .allow_more_workers_than_cores()
            .build()
    }

    /// Runs `body` with a fresh engine for `mode` and the runner of `mode` (a fresh
    /// runtime for tasks, whose tasks yield every `yield_every` operations), and
    /// records its sample as a run of `threads` threads or tasks.
    pub fn with_runner(
        &self,
        mode: Mode,
        threads: usize,
        yield_every: u32,
        body: impl FnOnce(&Stm, Runner<'_>) -> Sample,
    ) -> Measurement {
        let stm = self.engine(mode);
        let (sample, switches) = match mode {
            Mode::Threads => (body(&stm, Runner::Threads), None),
            Mode::Tasks(_) => {
                let runtime = self.runtime();
                let runner = Runner::Tasks {
                    runtime: &runtime,
                    yield_every,
                };
                let sample = body(&stm, runner);
                (sample, Some(runtime.switches()))
            }
        };
        Measurement {
            mode,
            manager: stm.config().manager.name(),
            threads,
            sample,
            switches,
        }
    }

    /// Measures `workload` in `mode` with `count` threads or tasks for `duration`.
    pub fn measure(
        &self,
        workload: &OversubWorkload,
        mode: Mode,
        count: usize,
        duration: Duration,
    ) -> Measurement {
        self.with_runner(mode, count, self.yield_every, |stm, runner| {
            workload.measure(stm, runner, count, duration)
        })
    }
}

/// A workload of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OversubWorkload {
    /// Transfers and audits.
    Bank(BankWorkload),
    /// An integer set.
    Intset(IntsetWorkload),
    /// TxLinux's pipeline.
    Pipeline(PipelineWorkload),
}

impl OversubWorkload {
    /// `bank`, the structure's name (`rbtree`, …), or `pipeline`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Bank(_) => "bank",
            Self::Intset(workload) => workload.structure.name(),
            Self::Pipeline(_) => "pipeline",
        }
    }

    /// Accounts, initial keys, or words per phase.
    pub fn size(&self) -> usize {
        match self {
            Self::Bank(workload) => workload.accounts,
            Self::Intset(workload) => workload.initial,
            Self::Pipeline(workload) => workload.words,
        }
    }

    /// Percentage of updating operations (100 for the pipeline).
    pub fn update_percent(&self) -> u32 {
        match self {
            Self::Bank(workload) => workload.update_percent(),
            Self::Intset(workload) => workload.update_percent,
            Self::Pipeline(_) => 100,
        }
    }

    /// A title for the screen.
    pub fn title(&self) -> String {
        match self {
            Self::Bank(workload) => format!(
                "bank · {} accounts · {}% audits",
                workload.accounts, workload.audit_percent
            ),
            Self::Intset(workload) => format!(
                "intset {} · {} keys · {}% updates",
                workload.structure.name(),
                workload.initial,
                workload.update_percent
            ),
            Self::Pipeline(workload) => format!(
                "pipeline · {} phases × {} words · {} txs per phase · {} reads, {} writes, {}% shared, {} spins",
                workload.phases,
                workload.words,
                workload.txs_per_phase,
                workload.reads,
                workload.writes,
                workload.shared_percent,
                workload.work
            ),
        }
    }

    /// Runs the workload on `runner` with `count` threads or tasks for `duration`, on
    /// fresh data of engine `stm`; the sample's counters cover the timed run only.
    ///
    /// # Panics
    /// If a check fails (an audit's total, the pipeline's sum).
    pub fn measure(
        &self,
        stm: &Stm,
        runner: Runner<'_>,
        count: usize,
        duration: Duration,
    ) -> Sample {
        match *self {
            Self::Bank(workload) => measure_bank(workload, stm, runner, count, duration),
            Self::Intset(workload) => match workload.structure {
                Structure::List => {
                    measure_set::<LinkedList<TVar<u64>>>(workload, stm, runner, count, duration)
                }
                Structure::Skip => {
                    measure_set::<SkipList<TVar<u64>>>(workload, stm, runner, count, duration)
                }
                Structure::RbTree => {
                    measure_set::<RbTree<TVar<u64>>>(workload, stm, runner, count, duration)
                }
                Structure::Hash => {
                    measure_set::<HashSet<TVar<u64>>>(workload, stm, runner, count, duration)
                }
            },
            Self::Pipeline(workload) => measure_pipeline(workload, stm, runner, count, duration),
        }
    }
}

fn measure_bank(
    workload: BankWorkload,
    stm: &Stm,
    runner: Runner<'_>,
    count: usize,
    duration: Duration,
) -> Sample {
    let bank = Arc::new(StmBank::new(stm.clone(), workload.accounts));
    let shared = bank.clone();
    let run = runner.timed(count, duration, thread_rng, move |rng| {
        workload.apply(&*shared, rng);
    });
    let stats = stm.stats().total;
    Sample {
        run,
        stats: Some(stats),
        final_total: Some(bank.audit()),
    }
}

fn measure_set<T: IntSet<Word = TVar<u64>> + 'static>(
    workload: IntsetWorkload,
    stm: &Stm,
    runner: Runner<'_>,
    count: usize,
    duration: Duration,
) -> Sample {
    let set = Arc::new(StmIntSet::<T>::new(stm.clone(), workload.initial));
    let mut pool = set.handle();
    workload.populate(|key| set.insert(&mut pool, key));
    drop(pool);
    let before = stm.stats().total;
    let (for_init, for_op) = (set.clone(), set.clone());
    let run = runner.timed(
        count,
        duration,
        move |index| (for_init.handle(), thread_rng(index)),
        move |(pool, rng)| workload.apply(&*for_op, pool, rng),
    );
    let stats = counters_since(&stm.stats().total, &before);
    Sample {
        run,
        stats: Some(stats),
        final_total: Some(set.elements().len() as i64),
    }
}

fn measure_pipeline(
    workload: PipelineWorkload,
    stm: &Stm,
    runner: Runner<'_>,
    count: usize,
    duration: Duration,
) -> Sample {
    let pipeline = Arc::new(Pipeline::new(stm.clone(), workload));
    let shared = pipeline.clone();
    let run = runner.timed(
        count,
        duration,
        |index| (PipelineCursor::default(), thread_rng(index)),
        move |(cursor, rng)| shared.step(cursor, rng),
    );
    let stats = stm.stats().total;
    Sample {
        run,
        stats: Some(stats),
        final_total: Some(pipeline.check(run.ops) as i64),
    }
}

/// What a comparison runs: the workloads, the modes, the thread counts, the run
/// length, and the scripted pattern (if any).
#[derive(Clone, Debug)]
pub struct Plan {
    /// Timed workloads.
    pub workloads: Vec<OversubWorkload>,
    /// Rows of every table.
    pub modes: Vec<Mode>,
    /// Columns of every table.
    pub threads: Vec<usize>,
    /// Length of each timed run.
    pub duration: Duration,
    /// The scripted conflict pattern, if it is to run.
    pub script: Option<ConflictScript>,
}

/// Runs `plan` with `setup` (see the module protocol), printing each table as soon
/// as it is complete and writing every row to `csv`. Returns every group.
///
/// # Errors
/// An I/O error writing the CSV file.
///
/// # Panics
/// If a measurement panics (a failed check).
pub fn run(setup: &Setup, plan: &Plan, csv: &mut Csv) -> io::Result<Vec<OversubGroup>> {
    let timed_runs = plan.workloads.len() * plan.modes.len() * plan.threads.len();
    let scripted_runs = plan
        .script
        .map_or(0, |script| plan.modes.len() * script.repeats.max(1));
    let progress = progress_bar((timed_runs + scripted_runs) as u64);
    let mut groups = Vec::new();
    for workload in &plan.workloads {
        let mut group = OversubGroup::new(workload);
        for &mode in &plan.modes {
            for &count in &plan.threads {
                progress.set_message(format!("{} · {} · {count}", workload.name(), mode.label()));
                group
                    .rows
                    .push(setup.measure(workload, mode, count, plan.duration));
                progress.inc(1);
            }
        }
        progress.suspend(|| println!("{}", group.table(setup, &plan.threads)));
        csv.write_records(group.csv_records(setup))?;
        groups.push(group);
    }
    if let Some(script) = plan.script {
        let mut group = OversubGroup::scripted(&script);
        for &mode in &plan.modes {
            progress.set_message(format!("scripted · {}", mode.label()));
            group
                .rows
                .push(script.measure(setup, mode, || progress.inc(1)));
        }
        progress.suspend(|| println!("{}", group.counts_table(setup)));
        csv.write_records(group.csv_records(setup))?;
        groups.push(group);
    }
    progress.finish_and_clear();
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> Setup {
        Setup {
            design: DesignKind::WriteBackCtl,
            manager: "backoff",
            workers: 2,
            yield_every: 4,
        }
    }

    #[test]
    fn every_workload_runs_in_every_mode() {
        let workloads = [
            OversubWorkload::Bank(BankWorkload {
                accounts: 8,
                audit_percent: 20,
            }),
            OversubWorkload::Intset(IntsetWorkload {
                structure: Structure::RbTree,
                initial: 64,
                update_percent: 20,
            }),
            OversubWorkload::Pipeline(PipelineWorkload {
                work: 10,
                ..PipelineWorkload::default()
            }),
        ];
        for workload in &workloads {
            for mode in Mode::all(&Policy::ALL) {
                let row = setup().measure(workload, mode, 6, Duration::from_millis(10));
                let stats = row.sample.stats.expect("STM rows count");
                assert!(
                    row.sample.run.ops >= 6,
                    "{workload:?} {mode:?}: a task never ran"
                );
                assert_eq!(stats.commits, row.sample.run.ops, "{workload:?} {mode:?}");
                assert_eq!(row.switches.is_some(), mode != Mode::Threads);
            }
        }
    }

    #[test]
    fn labels() {
        assert_eq!(Mode::Threads.label(), "threads");
        assert_eq!(Mode::Tasks(Policy::Ctluts).label(), "tasks/ctluts");
        assert_eq!(Mode::all(&[Policy::Ats]).len(), 2);
    }
}
