//! The oversubscription benchmark: bank, an integer set and TxLinux's pipeline at 1,
//! 2, 4, …, 64 threads, run as plain OS threads and as tasks on one worker per core
//! under each scheduling policy; then a scripted conflict pattern compared by counts.
//! Prints throughput (with the 64/2 stability column), abort rates, switches and
//! wasted time per workload, and writes every run to a CSV file.
//!
//! ```text
//! cargo run --release -p lutra-bench --bin oversub                  # full sweep (≈ 2 min)
//! cargo run --release -p lutra-bench --bin oversub -- --quick       # smoke sweep (≈ 20 s)
//! cargo run --release -p lutra-bench --bin oversub -- --scripted    # counts only
//! cargo run --release -p lutra-bench --bin oversub -- --workloads pipeline --threads 2,8,64 \
//!     --policies round-robin,ctluts --design wb-etl --manager timestamp
//! ```

use clap::Parser;
use lutra_bench::harness::contender::{parse_design, parse_manager};
use lutra_bench::harness::csv::Csv;
use lutra_bench::harness::oversub::{self, ConflictScript, Mode, OversubWorkload, Plan, Setup};
use lutra_bench::harness::sweep::RunArgs;
use lutra_bench::harness::tasks::DEFAULT_YIELD_EVERY;
use lutra_bench::workloads::bank::BankWorkload;
use lutra_bench::workloads::intset::Structure;
use lutra_bench::workloads::intset_workload::IntsetWorkload;
use lutra_bench::workloads::pipeline::PipelineWorkload;
use lutra_sched::policy::Policy;
use lutra_stm::DesignKind;

/// The workloads, as `--workloads` names them.
const WORKLOADS: [&str; 4] = ["bank", "intset", "pipeline", "scripted"];

/// Plain OS threads against the scheduler's tasks under each policy, oversubscribed.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Workloads, comma-separated (bank, intset, pipeline, scripted).
    #[arg(long, value_delimiter = ',', default_values = WORKLOADS, value_parser = WORKLOADS)]
    workloads: Vec<String>,
    /// Only the scripted conflict pattern (as `--workloads scripted`).
    #[arg(long)]
    scripted: bool,
    /// Scheduling policies of the task rows, comma-separated.
    #[arg(long, value_delimiter = ',',
          default_values = ["round-robin", "ats", "ciluts", "ctluts", "restart-profile"])]
    policies: Vec<Policy>,
    /// Leave out the plain-threads row.
    #[arg(long)]
    no_threads: bool,
    /// STM design (wb-ctl, wb-etl).
    #[arg(long, value_parser = parse_design, default_value = "wb-ctl")]
    design: DesignKind,
    /// Contention manager (restart-profile always runs with `priority`).
    #[arg(long, value_parser = parse_manager, default_value = "backoff")]
    manager: &'static str,
    /// Workers of the scheduler [default: one per core].
    #[arg(long)]
    workers: Option<usize>,
    /// Operations a task runs between two yields (the scheduler is cooperative).
    #[arg(long, default_value_t = DEFAULT_YIELD_EVERY,
          value_parser = clap::value_parser!(u32).range(1..))]
    yield_every: u32,
    /// Bank: accounts.
    #[arg(long, default_value_t = 64)]
    accounts: usize,
    /// Bank: percentage of audits.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(0..=100))]
    audit_percent: u32,
    /// Integer set: structure (list, skip, rbtree, hash).
    #[arg(long, value_parser = Structure::from_name, default_value = "rbtree")]
    structure: Structure,
    /// Integer set: percentage of updates.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(0..=100))]
    updates: u32,
    /// Integer set: initial keys [default: 256 for the list, 1024 for the others].
    #[arg(long)]
    initial: Option<usize>,
    /// Pipeline: phases.
    #[arg(long, default_value_t = 8)]
    phases: usize,
    /// Pipeline: words of each phase's array.
    #[arg(long, default_value_t = 16)]
    phase_words: usize,
    /// Pipeline: transactions per phase before the next.
    #[arg(long, default_value_t = 16)]
    txs_per_phase: u32,
    /// Pipeline: percentage of transactions that touch the shared word.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=100))]
    shared_percent: u32,
    /// Pipeline: spin iterations inside each transaction.
    #[arg(long, default_value_t = 200)]
    pipeline_work: u32,
    /// Scripted: tasks [default: 4 per worker].
    #[arg(long)]
    script_tasks: Option<usize>,
    /// Scripted: transactions per task [default: 2000; --quick: 500].
    #[arg(long)]
    script_txs: Option<u64>,
    /// Scripted: spin iterations inside each transaction.
    #[arg(long, default_value_t = 500)]
    script_work: u32,
    /// Scripted: repetitions per mode, summed [default: 3; --quick: 1].
    #[arg(long)]
    script_repeats: Option<usize>,
    #[command(flatten)]
    run: RunArgs,
}

impl Args {
    fn selected(&self, name: &str) -> bool {
        if self.scripted {
            name == "scripted"
        } else {
            self.workloads.iter().any(|chosen| chosen == name)
        }
    }

    fn timed_workloads(&self) -> Vec<OversubWorkload> {
        let mut workloads = Vec::new();
        if self.selected("bank") {
            workloads.push(OversubWorkload::Bank(BankWorkload {
                accounts: self.accounts.max(1),
                audit_percent: self.audit_percent,
            }));
        }
        if self.selected("intset") {
            workloads.push(OversubWorkload::Intset(IntsetWorkload {
                structure: self.structure,
                initial: self.initial.unwrap_or(self.structure.default_initial()),
                update_percent: self.updates,
            }));
        }
        if self.selected("pipeline") {
            workloads.push(OversubWorkload::Pipeline(PipelineWorkload {
                phases: self.phases.max(1),
                words: self.phase_words.max(1),
                txs_per_phase: self.txs_per_phase.max(1),
                shared_percent: self.shared_percent,
                work: self.pipeline_work,
                ..PipelineWorkload::default()
            }));
        }
        workloads
    }

    fn script(&self, workers: usize) -> Option<ConflictScript> {
        self.selected("scripted").then(|| ConflictScript {
            tasks: self.script_tasks.unwrap_or(4 * workers).max(1),
            txs_per_task: self
                .script_txs
                .unwrap_or(if self.run.quick { 500 } else { 2000 }),
            work: self.script_work,
            repeats: self
                .script_repeats
                .unwrap_or(if self.run.quick { 1 } else { 3 }),
        })
    }
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let workers = args.workers.unwrap_or(cores).max(1);
    let setup = Setup {
        design: args.design,
        manager: args.manager,
        workers,
        yield_every: args.yield_every,
    };
    let mut modes = Mode::all(&args.policies);
    if args.no_threads {
        modes.retain(|&mode| mode != Mode::Threads);
    }
    let plan = Plan {
        workloads: args.timed_workloads(),
        modes,
        threads: args.run.thread_counts(),
        duration: args.run.duration(),
        script: args.script(workers),
    };
    println!(
        "oversubscription · {cores} cores · {workers} workers · {:?} per run · threads {:?}\n",
        plan.duration, plan.threads
    );
    let mut csv = Csv::with_header(&args.run.csv_path("oversub"), &oversub::csv_header())?;
    oversub::run(&setup, &plan, &mut csv)?;
    eprintln!("CSV written to {}", csv.path().display());
    Ok(())
}
