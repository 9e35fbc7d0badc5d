//! Seed 001 (luaproc on transactional memory): its three experiments — one long
//! process under W workers, 50 senders and 50 receivers over 1/2/4 channels, parallel
//! string search over log files — under `lutra` with the run queue on locks and on
//! transactions (`--sync=locks|tm`), beside the same scripts under a plain lua5.4
//! (processes as coroutines on one core), from `luabench`. The processor time of each
//! run shows whether idle workers spin.

use super::experiment::{Experiment, Findings, Grid, Inputs, bars, gather, missing};
use super::jobs::Job;
use super::spread::{Samples, Spread};
use super::verdict::{best_at, speed};
use crate::harness::csv::{Record, Table};

/// The experiment.
pub const EXPERIMENT: Experiment = Experiment {
    id: "seed001",
    title: "Lua processes on transactions: luaproc's experiments",
    paper: "\"From Locks to Transactional Memory: Lessons Learned from Porting a \
            Real-world Application\" (Skyrme, Rodriguez): luaproc on GCC's STM",
    shows: "The cost of lutra's processes and channels on work the stock interpreter does \
            alone, whether more workers shorten it, and whether the run queue on \
            transactions (tm) keeps up with the one on locks; the processor time shows \
            that idle workers sleep instead of spinning.",
    reference: "the same scripts under a plain lua5.4 (one core), in the same round.",
    jobs: &[Job::LuaProc],
    analyze,
};

const PARTS: [(&str, &str); 3] = [
    ("exp1", "one long process (elapsed seconds)"),
    (
        "exp2",
        "50 senders, 50 receivers over C channels (elapsed seconds)",
    ),
    ("exp3", "string search over F log files (elapsed seconds)"),
];

fn analyze(inputs: &Inputs<'_>) -> Findings {
    let mut findings = Findings::default();
    if let Some(note) = missing(inputs, Job::LuaProc) {
        findings.notes.push(note);
        return findings;
    }
    let rounds = inputs.rounds(Job::LuaProc);
    for (exp, what) in PARTS {
        let groups = groups_of(rounds, exp);
        let wall = gather(
            rounds,
            |r| r.get("experiment") == exp && r.get("ok") == "true",
            |r| r.get("variant").to_owned(),
            |r| group_position(&groups, r),
            |r| r.num("wall_s"),
        );
        findings.figures.push(bars(
            &format!("seed001-{exp}"),
            &format!("{exp}: {what}"),
            "seconds (lower is better)",
            groups.clone(),
            &wall,
        ));
        findings.grids.push(grid(rounds, exp, what, &groups));
        if exp == "exp2" {
            findings.verdict = verdict(rounds, &groups);
        }
    }
    let failed: usize = rounds
        .iter()
        .flat_map(Table::records)
        .filter(|r| r.get("ok") != "true")
        .count();
    if failed > 0 {
        findings
            .notes
            .push(format!("{failed} runs failed (see the log)."));
    }
    findings.notes.push(format!(
        "Each run is a child process timed from outside; the spread is over {} rounds.",
        rounds.len()
    ));
    findings
}

/// Experiment 2's verdict: the fastest lutra variant against lua5.4, on the last
/// group (the most channels), from each run's time ÷ lua5.4's in its round.
fn verdict(rounds: &[Table], groups: &[String]) -> Option<String> {
    let last = groups.len().checked_sub(1)?;
    let speedups = gather(
        rounds,
        |r| r.get("experiment") == "exp2" && r.get("ok") == "true",
        |r| r.get("variant").to_owned(),
        |r| group_position(groups, r),
        |r| r.num("vs_lua").filter(|&v| v > 0.0).map(|v| 1.0 / v),
    );
    let (variant, ratio) = best_at(&speedups, last as f64)?;
    Some(speed(
        &variant,
        "lua5.4",
        ratio,
        &format!("on experiment 2 (rendezvous messages, {})", groups[last]),
    ))
}

/// The experiment's groups in first-seen order.
pub fn groups_of(rounds: &[Table], exp: &str) -> Vec<String> {
    let mut groups: Vec<String> = Vec::new();
    for record in rounds.iter().flat_map(Table::records) {
        if record.get("experiment") == exp && !groups.iter().any(|g| g == record.get("group")) {
            groups.push(record.get("group").to_owned());
        }
    }
    groups
}

/// One row per (group, variant): elapsed, CPU, cores busy, ÷ lua5.4 (per round).
fn grid(rounds: &[Table], exp: &str, what: &str, groups: &[String]) -> Grid {
    let mut per: Vec<(String, String, [Samples; 4])> = Vec::new();
    for record in rounds.iter().flat_map(Table::records) {
        if record.get("experiment") != exp || record.get("ok") != "true" {
            continue;
        }
        let key = (
            record.get("group").to_owned(),
            record.get("variant").to_owned(),
        );
        let index = match per.iter().position(|(g, v, _)| (g, v) == (&key.0, &key.1)) {
            Some(index) => index,
            None => {
                per.push((key.0, key.1, Default::default()));
                per.len() - 1
            }
        };
        let columns: [fn(&Record<'_>) -> Option<f64>; 4] = [
            |r| r.num("wall_s"),
            |r| r.num("cpu_s"),
            |r| r.num("cores_busy"),
            |r| r.num("vs_lua"),
        ];
        for (samples, column) in per[index].2.iter_mut().zip(columns) {
            if let Some(value) = column(&record) {
                samples.push("", 0.0, value);
            }
        }
    }
    per.sort_by_key(|(group, _, _)| groups.iter().position(|g| g == group));
    let cell = |samples: &Samples, format: fn(f64) -> String| {
        samples
            .spreads()
            .first()
            .and_then(|(_, points)| {
                points
                    .first()
                    .map(|&(_, s): &(f64, Spread)| s.describe(format))
            })
            .unwrap_or_else(|| "–".into())
    };
    Grid {
        caption: format!("{exp}: {what}; CPU seconds and cores busy show no busy waiting"),
        header: [
            "group",
            "variant",
            "elapsed s",
            "CPU s",
            "cores busy",
            "÷ lua5.4 time",
        ]
        .map(String::from)
        .to_vec(),
        rows: per
            .iter()
            .map(|(group, variant, [wall, cpu, busy, vs])| {
                vec![
                    group.clone(),
                    variant.clone(),
                    cell(wall, |v| format!("{v:.3}")),
                    cell(cpu, |v| format!("{v:.3}")),
                    cell(busy, |v| format!("{v:.2}")),
                    cell(vs, |v| format!("{v:.2}×")),
                ]
            })
            .collect(),
    }
}

/// The row's group as an x position: its index in `groups` (none if absent).
fn group_position(groups: &[String], row: &Record<'_>) -> Option<f64> {
    groups
        .iter()
        .position(|g| g == row.get("group"))
        .map(|i| i as f64)
}
