//! Priority inversion with and without TxLinux's priority contention manager (seed
//! 003, Section 6). Tasks of the scheduler, each with a scheduling priority
//! (`lutra_sched::set_priority`) that start hooks hand to the engine as the
//! transactions' contention priority, update a small shared table with transactions
//! of random sizes. For every conflict the contention manager decides, a
//! [`CountingManager`] records whether the higher-priority transaction lost; the
//! read-write conflicts no manager sees (a reader overtaken by a commit fails
//! validation) are counted by [`ValidationEscalation`], which in the last variants
//! also makes a high-priority transaction irrevocable after `k` of them in a row,
//! and then also remembers per task ([`TaskMemory`]) that the high-priority task
//! lost, starting its next transactions irrevocable for a decaying window.
//!
//! | variant | manager | escalation |
//! |---------|---------|------------|
//! | `size_matters` | SizeMatters (MetaTM's default) | no |
//! | `priority` | Priority (os_prio: priority, then size, then age) | no |
//! | `priority+escalate` | Priority | after `k` validation aborts of a transaction |
//! | `priority+memory` | Priority | as above, and per task: `W` transactions after a loss |
//!
//! The cost of escalating is paid by the low-priority tasks (an irrevocable
//! transaction runs alone among updaters): compare their commits per second (`lo
//! tx/s`) across the variants.
//!
//! With one high-priority task (the default) every validation abort it suffers was
//! caused by a lower-priority writer, so "validation inversions" is exact; with more,
//! it is an upper bound (the overwriting writer may have had the same priority).
//!
//! ```text
//! cargo run --release -p lutra-bench --bin inversion
//! cargo run --release -p lutra-bench --bin inversion -- --tasks 16 --escalate-after 1
//! cargo run --release -p lutra-bench --bin inversion -- --window-max 1024 --half-life 256
//! ```

use clap::Parser;
use lutra_bench::harness::csv::{Csv, Fields};
use lutra_bench::harness::table::{GridLine, percent, write_grid};
use lutra_elide::coop::{
    CountingManager, Decisions, TaskIdentity, TaskKey, TaskMemory, ValidationEscalation,
    ValidationLosses,
};
use lutra_sched::{Runtime, TaskParking};
use lutra_stm::{Config, DesignKind, Stm, TVar, TxEvent, TxHooks, cm};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Inversions under SizeMatters and the priority manager, with and without escalation.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Tasks (on two workers).
    #[arg(long, default_value_t = 8)]
    tasks: usize,
    /// Tasks that run at high priority (the rest run at priority 0).
    #[arg(long, default_value_t = 1)]
    high: usize,
    /// Words in the shared table (fewer: more conflicts).
    #[arg(long, default_value_t = 32)]
    words: usize,
    /// Most words a transaction reads (it reads 2..=this, then writes two of them).
    #[arg(long, default_value_t = 12)]
    max_reads: usize,
    /// Validation aborts in a row after which a high-priority transaction escalates.
    #[arg(long, default_value_t = 2)]
    escalate_after: u32,
    /// Task memory: transactions escalated after a task's first loss.
    #[arg(long, default_value_t = 16)]
    window_first: u32,
    /// Task memory: the longest window (each further loss doubles it up to this).
    #[arg(long, default_value_t = 16384)]
    window_max: u32,
    /// Task memory: optimistic commits without a loss after which the window halves.
    #[arg(long, default_value_t = 4096)]
    half_life: u32,
    /// Milliseconds per variant.
    #[arg(long, default_value_t = 1000)]
    duration_ms: u64,
    /// Where to write the CSV file [default: target/bench/inversion.csv].
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
}

/// The high-priority class.
const HIGH: i64 = 10;

/// Start hooks that hand the scheduler's task priority to the engine, and the
/// scheduler's task as the key of the escalation memory.
struct TaskPriority;

impl TxHooks for TaskPriority {
    fn start_priority(&self, _event: &TxEvent) -> Option<i64> {
        lutra_sched::current_task().map(|task| task.priority())
    }
}

impl TaskIdentity for TaskPriority {
    fn current_task(&self) -> Option<TaskKey> {
        lutra_sched::current_task().map(|task| TaskKey {
            id: task.id(),
            priority: task.priority(),
        })
    }
}

#[derive(Clone, Copy, Debug)]
struct Variant {
    name: &'static str,
    manager: &'static str,
    escalate: bool,
    memory: bool,
}

const VARIANTS: [Variant; 4] = [
    Variant {
        name: "size_matters",
        manager: "size_matters",
        escalate: false,
        memory: false,
    },
    Variant {
        name: "priority",
        manager: "priority",
        escalate: false,
        memory: false,
    },
    Variant {
        name: "priority+escalate",
        manager: "priority",
        escalate: true,
        memory: false,
    },
    Variant {
        name: "priority+memory",
        manager: "priority",
        escalate: true,
        memory: true,
    },
];

/// What one run counted.
struct Outcome {
    design: DesignKind,
    variant: Variant,
    decisions: Decisions,
    losses: ValidationLosses,
    commits: [u64; 2],
}

impl Outcome {
    /// Conflicts: manager decisions plus validation aborts.
    fn conflicts(&self) -> u64 {
        self.decisions.decided + self.losses.aborts
    }

    /// (manager inversions + validation aborts of high-priority transactions) ÷
    /// conflicts.
    fn total_inversion_rate(&self) -> f64 {
        let inverted = self.decisions.inversions + self.losses.high_aborts;
        inverted as f64 / self.conflicts().max(1) as f64
    }
}

fn run(args: &Args, runtime: &Runtime, design: DesignKind, variant: Variant) -> Outcome {
    let counting = Arc::new(CountingManager::new(
        cm::by_name(variant.manager).expect("a known manager"),
    ));
    let after = variant.escalate.then_some(args.escalate_after);
    let config = Config::default().with_design(design);
    let mut escalation =
        ValidationEscalation::new(Arc::new(TaskPriority), after, HIGH, config.max_descriptors);
    if variant.memory {
        escalation = escalation.with_task_memory(TaskMemory {
            identity: Arc::new(TaskPriority),
            first: args.window_first,
            max: args.window_max,
            half_life: args.half_life,
        });
    }
    let hooks = Arc::new(escalation);
    let stm = Stm::new(
        config
            .with_shared_manager(counting.clone())
            .with_hooks(hooks.clone())
            .with_parking(Arc::new(TaskParking)),
    );
    let table: Arc<Vec<TVar<i64>>> = Arc::new((0..args.words).map(|_| TVar::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let commits = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let tasks: Vec<_> = (0..args.tasks)
        .map(|index| {
            let (stm, table, stop, commits) =
                (stm.clone(), table.clone(), stop.clone(), commits.clone());
            let (words, max_reads) = (args.words, args.max_reads.max(2));
            let high = index < args.high;
            runtime.spawn(move || {
                lutra_sched::set_priority(if high { HIGH } else { 0 });
                let mut rng = fastrand::Rng::with_seed(index as u64 + 1);
                let mut picks = Vec::with_capacity(max_reads);
                // ORDERING: the flag carries no data.
                while !stop.load(Ordering::Relaxed) {
                    picks.clear();
                    picks.extend((0..rng.usize(2..=max_reads)).map(|_| rng.usize(..words)));
                    stm.atomically(|tx| {
                        let mut sum = 0;
                        for &word in &picks {
                            sum += tx.read(&table[word])?;
                        }
                        std::hint::black_box(sum);
                        tx.modify(&table[picks[0]], |n| n + 1)?;
                        tx.modify(&table[picks[1]], |n| n - 1)
                    });
                    commits[usize::from(high)].fetch_add(1, Ordering::Relaxed);
                    lutra_sched::yield_now();
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(args.duration_ms));
    stop.store(true, Ordering::Relaxed);
    tasks
        .into_iter()
        .for_each(|task| task.join().expect("task"));
    let total: i64 = stm.atomically(|tx| table.iter().map(|word| tx.read(word)).sum());
    assert_eq!(
        total, 0,
        "the table's increments and decrements must cancel"
    );
    Outcome {
        design,
        variant,
        decisions: counting.decisions(),
        losses: hooks.losses(),
        commits: [0, 1].map(|class| commits[class].load(Ordering::Relaxed)),
    }
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    assert!(args.words >= 2 && args.tasks > 0, "need 2 words and a task");
    let runtime = Runtime::builder().workers(2).build();
    let progress =
        lutra_bench::harness::sweep::progress_bar((DesignKind::ALL.len() * VARIANTS.len()) as u64);
    let mut outcomes = Vec::new();
    for design in DesignKind::ALL {
        for variant in VARIANTS {
            progress.set_message(format!("{} {}", design.name(), variant.name));
            outcomes.push(run(&args, &runtime, design, variant));
            progress.inc(1);
        }
    }
    progress.finish_and_clear();
    print!("{}", table(&args, &outcomes));
    let path = args
        .csv
        .clone()
        .unwrap_or_else(|| lutra_bench::harness::csv::default_csv_path("inversion"));
    write_csv(&path, &args, &outcomes)?;
    println!("CSV: {}", path.display());
    runtime.shutdown();
    Ok(())
}

/// The run's settings, in the CSV's column order (`tasks` to `half_life`).
fn settings(args: &Args) -> Fields {
    lutra_bench::fields![
        args.tasks,
        args.high,
        args.words,
        args.max_reads,
        args.escalate_after,
        args.window_first,
        args.window_max,
        args.half_life,
    ]
}

fn table(args: &Args, outcomes: &[Outcome]) -> String {
    let [
        tasks,
        high,
        words,
        max_reads,
        escalate,
        first,
        max,
        half_life,
    ] = <[String; 8]>::try_from(settings(args)).expect("eight settings");
    let mut out = format!(
        "inversion · {tasks} tasks on 2 workers, {high} at priority {HIGH} · {words} words · \
         reads 2..={max_reads} · escalate after {escalate} · window {first}..={max}, \
         half-life {half_life}\n"
    );
    let headers: Vec<String> = [
        "decided", "mixed", "cm inv", "cm inv%", "val ab", "val high", "escal", "w escal",
        "total%", "hi tx/s", "lo tx/s",
    ]
    .map(str::to_owned)
    .to_vec();
    let seconds = args.duration_ms as f64 / 1000.0;
    let lines: Vec<GridLine> = outcomes
        .iter()
        .map(|o| {
            let label = format!("{} {}", o.design.name(), o.variant.name);
            let cells = vec![
                o.decisions.decided.to_string(),
                o.decisions.mixed.to_string(),
                o.decisions.inversions.to_string(),
                percent(o.decisions.inversion_rate()),
                o.losses.aborts.to_string(),
                o.losses.high_aborts.to_string(),
                o.losses.escalations.to_string(),
                o.losses.window_escalations.to_string(),
                percent(o.total_inversion_rate()),
                format!("{:.0}", o.commits[1] as f64 / seconds),
                format!("{:.0}", o.commits[0] as f64 / seconds),
            ];
            (label, cells)
        })
        .collect();
    write_grid(&mut out, "variant", &headers, &lines);
    out.push_str(
        "cm inv% = manager decisions the higher priority lost ÷ decisions; total% = (cm inv + \
         validation aborts of high-priority transactions) ÷ (decisions + validation aborts); escal = \
         restarts escalated after k losses of a transaction; w escal = attempts escalated by \
         a task's window; lo tx/s = commits of the low-priority tasks (the cost)\n",
    );
    out
}

fn write_csv(path: &std::path::Path, args: &Args, outcomes: &[Outcome]) -> std::io::Result<()> {
    let mut csv = Csv::with_header(
        path,
        "bench,design,variant,tasks,high,words,max_reads,escalate_after,window_first,window_max,\
         half_life,seconds,decided,mixed,cm_inversions,cm_inversion_rate,validation_aborts,\
         high_validation_aborts,escalations,window_escalations,total_inversion_rate,\
         high_commits,low_commits",
    )?;
    csv.write_records(outcomes.iter().map(|o| {
        let mut fields = lutra_bench::fields!["inversion", o.design.name(), o.variant.name];
        fields.extend(settings(args));
        fields.extend(lutra_bench::fields![
            format!("{:.3}", args.duration_ms as f64 / 1000.0),
            o.decisions.decided,
            o.decisions.mixed,
            o.decisions.inversions,
            format!("{:.6}", o.decisions.inversion_rate()),
            o.losses.aborts,
            o.losses.high_aborts,
            o.losses.escalations,
            o.losses.window_escalations,
            format!("{:.6}", o.total_inversion_rate()),
            o.commits[1],
            o.commits[0],
        ]);
        fields
    }))
}
