//! Seed 003 (TxLinux): priority inversions with and without the priority contention
//! manager (`inversion`), cooperative locks whose sections sometimes do I/O against a
//! plain mutex (`coop`), and TxLinux's pipeline under restart-profile scheduling
//! beside round-robin and plain threads (`oversub`'s pipeline rows).

use super::chart::Figure;
use super::experiment::{
    Experiment, Findings, Inputs, bars, gather, missing, spread_grid, thread_lines, threads, times,
};
use super::jobs::Job;
use super::spread::Samples;
use crate::harness::csv::{Record, Table};

/// The experiment.
pub const EXPERIMENT: Experiment = Experiment {
    id: "seed003",
    title: "Priorities, cooperative locks and the pipeline",
    paper: "\"TxLinux: Using and Managing Hardware Transactional Memory in an Operating \
            System\" (Rossbach et al.): transaction priorities and cooperative locks",
    shows: "How often a high-priority transaction loses to a low-priority one under \
            the simulated hardware TM's default manager (SizeMatters) and under the priority manager (with escalation and \
            per-task memory); whether an optimistic cooperative lock, which restarts a \
            section exclusively when it reaches I/O, keeps up with a mutex; and what \
            restart-profile scheduling does to the pipeline.",
    reference: "SizeMatters (no priorities) for inversions; std::sync::Mutex for the \
                cooperative lock; round-robin tasks and plain threads for the pipeline — \
                each in the same round.",
    jobs: &[Job::Inversion, Job::Coop, Job::Oversub],
    analyze,
};

fn analyze(inputs: &Inputs<'_>) -> Findings {
    let mut findings = Findings::default();
    inversions(inputs, &mut findings);
    coop(inputs, &mut findings);
    pipeline(inputs, &mut findings);
    findings
}

/// The inversions' verdict, on the first design measured: the priority variant with
/// the fewest inversions against the first variant (SizeMatters, no priorities).
fn inversion_verdict(rate: &Samples, variants: &[String]) -> Option<String> {
    let (design, points) = rate.spreads().into_iter().next()?;
    let reference = points.iter().find(|&&(x, _)| x == 0.0)?.1.median;
    let (x, best) = points
        .iter()
        .filter(|&&(x, _)| x > 0.0)
        .map(|&(x, spread)| (x, spread.median))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(format!(
        "The priority manager ({}) lets a high-priority transaction lose {best:.1}% of its \
         conflicts to lower priority, against {reference:.1}% under {} ({design})",
        variants.get(x as usize)?,
        variants.first()?,
    ))
}

fn inversions(inputs: &Inputs<'_>, findings: &mut Findings) {
    if let Some(note) = missing(inputs, Job::Inversion) {
        findings.notes.push(note);
        return;
    }
    let rounds = inputs.rounds(Job::Inversion);
    let variants = first_seen(rounds, "variant");
    let position = |r: &Record<'_>| {
        variants
            .iter()
            .position(|v| v == r.get("variant"))
            .map(|i| i as f64)
    };
    let rate = gather(
        rounds,
        |_| true,
        |r| r.get("design").to_owned(),
        position,
        |r| Some(r.num("total_inversion_rate")? * 100.0),
    );
    findings.figures.push(bars(
        "seed003-inversion",
        "Priority inversions: % of a high-priority task's losses to lower priority",
        "inversions, % (lower is better)",
        variants.clone(),
        &rate,
    ));
    findings.verdict = inversion_verdict(&rate, &variants);
    let name = |x: f64| variants.get(x as usize).cloned().unwrap_or_default();
    findings.grids.push(spread_grid(
        "All inversions (manager-decided and validation), % of conflicts the high-priority task met",
        "design",
        &rate,
        name,
        |v| format!("{v:.2}%"),
    ));
    let decided = gather(
        rounds,
        |_| true,
        |r| r.get("design").to_owned(),
        position,
        |r| Some(r.num("cm_inversion_rate")? * 100.0),
    );
    findings.grids.push(spread_grid(
        "Inversions among the conflicts the contention manager decided, %",
        "design",
        &decided,
        name,
        |v| format!("{v:.2}%"),
    ));
    let low = gather(
        rounds,
        |_| true,
        |r| r.get("design").to_owned(),
        position,
        |r| Some(r.num("low_commits")? / r.num("seconds")?.max(1e-9)),
    );
    findings.grids.push(spread_grid(
        "The price: low-priority commits per second",
        "design",
        &low,
        name,
        super::chart::si,
    ));
}

fn coop(inputs: &Inputs<'_>, findings: &mut Findings) {
    if let Some(note) = missing(inputs, Job::Coop) {
        findings.notes.push(note);
        return;
    }
    let rounds = inputs.rounds(Job::Coop);
    let throughput = gather(
        rounds,
        |_| true,
        |r| r.get("impl").to_owned(),
        |r| r.num("threads"),
        |r| r.num("ops_per_sec"),
    );
    let io = rounds
        .iter()
        .flat_map(Table::records)
        .next()
        .map_or_else(String::new, |r| {
            format!(", {}% of sections do I/O", r.get("io_percent"))
        });
    findings.figures.push(thread_lines(
        "seed003-coop",
        &format!("Cooperative lock against a mutex{io}: critical sections/s"),
        "sections per second",
        "threads",
        &throughput,
    ));
    let versus = gather(
        rounds,
        |r| r.get("impl") != "mutex",
        |r| r.get("impl").to_owned(),
        |r| r.num("threads"),
        |r| r.num("vs_mutex"),
    );
    findings.grids.push(spread_grid(
        "Cooperative lock: throughput ÷ the mutex in the same round",
        "lock",
        &versus,
        threads,
        times,
    ));
}

fn pipeline(inputs: &Inputs<'_>, findings: &mut Findings) {
    if let Some(note) = missing(inputs, Job::Oversub) {
        findings.notes.push(note);
        return;
    }
    let rounds = inputs.rounds(Job::Oversub);
    let keep = |r: &Record<'_>| {
        r.get("workload") == "pipeline"
            && matches!(
                mode(r).as_str(),
                "threads" | "round-robin" | "restart-profile"
            )
    };
    let throughput = by_mode(rounds, keep, |r| r.num("ops_per_sec"));
    findings.figures.push(transactions_per_second(
        "seed003-pipeline",
        "Pipeline under restart-profile scheduling: transactions/s",
        &throughput,
    ));
    let aborts = by_mode(rounds, keep, aborts_per_commit);
    findings.grids.push(spread_grid(
        "Pipeline: aborts per commit",
        "mode",
        &aborts,
        threads,
        |v| format!("{v:.3}"),
    ));
}

/// An `oversub` figure (`value`) of the rows `keep` takes, over `rounds`: one series
/// per [`mode`], by thread count.
pub fn by_mode(
    rounds: &[Table],
    keep: impl Fn(&Record<'_>) -> bool,
    value: impl Fn(&Record<'_>) -> Option<f64>,
) -> Samples {
    gather(rounds, keep, mode, |r| r.num("threads"), value)
}

/// A line chart of transactions per second by threads or tasks.
pub fn transactions_per_second(id: &str, title: &str, throughput: &Samples) -> Figure {
    thread_lines(
        id,
        title,
        "transactions per second",
        "threads or tasks",
        throughput,
    )
}

/// `threads`, or the policy of a task row.
pub fn mode(r: &Record<'_>) -> String {
    if r.get("policy").is_empty() {
        r.get("mode").to_owned()
    } else {
        r.get("policy").to_owned()
    }
}

/// Aborts ÷ commits of an `oversub` row.
pub fn aborts_per_commit(r: &Record<'_>) -> Option<f64> {
    let commits = r.num("commits")?;
    (commits > 0.0).then(|| r.num("aborts").unwrap_or(0.0) / commits)
}

fn first_seen(rounds: &[Table], column: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for record in rounds.iter().flat_map(Table::records) {
        if !seen.iter().any(|v| v == record.get(column)) {
            seen.push(record.get(column).to_owned());
        }
    }
    seen
}
