//! Seed 004 (LUTS): throughput from 1 to 64 threads or tasks on bank, an integer set
//! (red-black tree) and the pipeline, as plain OS threads and as tasks on one worker
//! per core under each scheduling policy (`oversub`): the paper's oversubscription
//! curves, and aborts per commit.

use super::experiment::{
    Experiment, Findings, Inputs, missing, spread_grid, thread_lines, threads,
};
use super::jobs::Job;
use super::seed003::{aborts_per_commit, by_mode, transactions_per_second};
use super::verdict::{best_at, largest_x, speed};

/// The experiment.
pub const EXPERIMENT: Experiment = Experiment {
    id: "seed004",
    title: "Oversubscription: threads against scheduled tasks",
    paper: "\"LUTS: A Lightweight User-Level Transactional Scheduler\" (Nicacio, Baldassin, \
            Araujo)",
    shows: "What happens to throughput and to aborts when there are many more threads \
            than cores: plain OS threads against the same work as tasks on one worker \
            per core, under round-robin and the conflict-aware policies (ATS: adaptive \
            transaction scheduling; CI-LUTS and CT-LUTS: switching to another task by \
            contention intensity or by a table of past conflicts; restart-profile).",
    reference: "plain OS threads at the same count, in the same round.",
    jobs: &[Job::Oversub],
    analyze,
};

const WORKLOADS: [(&str, &str, &str); 3] = [
    ("bank", "bank", "Bank transfers"),
    ("rbtree", "intset", "Integer set (red-black tree)"),
    ("pipeline", "pipeline", "Pipeline"),
];

fn analyze(inputs: &Inputs<'_>) -> Findings {
    let mut findings = Findings::default();
    if let Some(note) = missing(inputs, Job::Oversub) {
        findings.notes.push(note);
        return findings;
    }
    let rounds = inputs.rounds(Job::Oversub);
    for (workload, id, title) in WORKLOADS {
        let keep = |r: &crate::harness::csv::Record<'_>| r.get("workload") == workload;
        let throughput = by_mode(rounds, keep, |r| r.num("ops_per_sec"));
        findings.figures.push(transactions_per_second(
            &format!("seed004-{id}"),
            &format!("{title}: transactions/s, 1 to 64 threads or tasks"),
            &throughput,
        ));
        let aborts = by_mode(rounds, keep, aborts_per_commit);
        findings.figures.push(thread_lines(
            &format!("seed004-{id}-aborts"),
            &format!("{title}: aborts per commit"),
            "aborts per commit (lower is better)",
            "threads or tasks",
            &aborts,
        ));
        let versus = by_mode(
            rounds,
            |r| keep(r) && !r.get("policy").is_empty(),
            |r| r.num("vs_threads"),
        );
        if workload == "bank" {
            findings.verdict = versus.spreads().into_iter().next().and_then(|(first, _)| {
                let x = largest_x(&versus, &first)?;
                let (policy, ratio) = best_at(&versus, x)?;
                Some(speed(
                    &format!("Tasks under {policy}"),
                    "plain threads",
                    ratio,
                    &format!("on the bank at {}", threads_or_tasks(x)),
                ))
            });
        }
        findings.grids.push(spread_grid(
            &format!("{title}: tasks' throughput ÷ plain threads at the same count, same round"),
            "policy",
            &versus,
            threads,
            super::experiment::times,
        ));
    }
    findings.notes.push(format!(
        "{} workers (one per core); the spread is over {} rounds.",
        inputs.cores,
        rounds.len()
    ));
    findings
}

/// `64 threads or tasks`.
fn threads_or_tasks(x: f64) -> String {
    format!("{x:.0} threads or tasks")
}
