//! Seed 002 (Guild/Ractor): fib hub (a hub process hands fib(n) requests to worker
//! processes) and word count (mapper processes count distinct words per document)
//! under `lutra` (from `luabench`), beside serial lua5.4 and, when Ruby 3 is installed,
//! the same programs on Ruby Ractors (`bench/ruby/`). Each system's speed-up is over
//! its own serial run in the same round: lutra's one-worker run (fib: the plain loop
//! under lutra; word count: the hub on one worker, lutra has no serial variant),
//! Ruby's serial loop, lua5.4's serial loop (its "hub" runs coroutines on one core).

use super::experiment::{Experiment, Findings, Inputs, bars, gather, missing, spread_grid, times};
use super::jobs::Job;
use super::ruby;
use super::spread::Samples;
use super::verdict::{median, speed};
use crate::harness::csv::Table;
use std::collections::BTreeMap;

/// The experiment.
pub const EXPERIMENT: Experiment = Experiment {
    id: "seed002",
    title: "Isolated processes: fib hub and word count against Ruby Ractors",
    paper: "Koichi Sasada's Guild design for Ruby (shipped as Ractors): isolated parallel \
            units passing messages",
    shows: "Whether lutra's isolated processes turn the cores into speed-up on the \
            Ractor paper's two programs, and how that speed-up compares with Ruby's \
            Ractors on the same work.",
    reference: "each system's own serial run (lua5.4, lutra on one worker, Ruby), in the \
                same round; speed-up = serial time ÷ parallel time.",
    jobs: &[Job::LuaRactor, Job::Ruby],
    analyze,
};

/// The workloads, as luabench and the Ruby table name them.
const WORKLOADS: [(&str, &str); 2] = [("fib", "fib hub"), ("wc", "word count")];

fn analyze(inputs: &Inputs<'_>) -> Findings {
    let mut findings = Findings::default();
    if let Some(note) = missing(inputs, Job::LuaRactor) {
        findings.notes.push(note);
        return findings;
    }
    if let Some(note) = missing(inputs, Job::Ruby) {
        findings.notes.push(note);
    }
    let lua_rounds = inputs.rounds(Job::LuaRactor);
    let ruby_rounds = inputs.rounds(Job::Ruby);
    let workers = lua_rounds
        .iter()
        .flat_map(Table::records)
        .filter_map(|r| r.num("workers"))
        .fold(1.0f64, f64::max);
    let many = format!("lutra -w{workers:.0} hub");
    let categories: Vec<String> = WORKLOADS
        .iter()
        .map(|(_, name)| (*name).to_owned())
        .collect();
    let index = |workload: &str| {
        WORKLOADS
            .iter()
            .position(|(w, _)| *w == workload)
            .map(|i| i as f64)
    };

    // Elapsed time of every system's serial and parallel runs.
    let series_of = |variant: &str, workload: &str| -> Option<String> {
        let serial_ref = if workload == "fib" {
            "lutra -w1 serial"
        } else {
            "lutra -w1 hub"
        };
        match variant {
            "lua5.4 serial" => Some("lua5.4 serial".into()),
            v if v == serial_ref => Some("lutra, 1 worker".into()),
            v if v == many => Some(format!("lutra, {workers:.0} workers")),
            _ => None,
        }
    };
    let mut wall = gather(
        lua_rounds,
        |r| r.get("ok") == "true",
        |r| series_of(r.get("variant"), r.get("experiment")).unwrap_or_default(),
        |r| {
            series_of(r.get("variant"), r.get("experiment"))?;
            index(r.get("experiment"))
        },
        |r| r.num("wall_s"),
    );
    for record in ruby_rounds.iter().flat_map(Table::records) {
        if let (Some(x), Some(seconds)) = (index(record.get("workload")), record.num("wall_s")) {
            wall.push(&format!("ruby {}", record.get("mode")), x, seconds);
        }
    }
    findings.figures.push(bars(
        "seed002-elapsed",
        "fib hub and word count: elapsed seconds per system",
        "seconds (lower is better)",
        categories.clone(),
        &wall,
    ));

    // Speed-up over each system's own serial run, round by round.
    let mut speedup = Samples::default();
    for (round, table) in lua_rounds.iter().enumerate() {
        let time = |exp: &str, variant: &str| {
            table
                .records()
                .find(|r| {
                    r.get("experiment") == exp
                        && r.get("variant") == variant
                        && r.get("ok") == "true"
                })
                .and_then(|r| r.num("wall_s"))
        };
        for (workload, _) in WORKLOADS {
            let x = index(workload).unwrap_or(0.0);
            let serial_ref = if workload == "fib" {
                "lutra -w1 serial"
            } else {
                "lutra -w1 hub"
            };
            if let (Some(one), Some(par)) = (time(workload, serial_ref), time(workload, &many)) {
                speedup.push(&format!("lutra, {workers:.0} workers"), x, one / par);
            }
            if let Some(ruby) = ruby_rounds.get(round) {
                let ruby_time = |mode: &str| {
                    ruby.records()
                        .find(|r| r.get("workload") == workload && r.get("mode") == mode)
                        .and_then(|r| r.num("wall_s"))
                };
                if let (Some(one), Some(par)) = (ruby_time("serial"), ruby_time("ractors")) {
                    speedup.push("ruby ractors", x, one / par);
                }
            }
            if let (Some(one), Some(co)) = (
                time(workload, "lua5.4 serial"),
                time(workload, "lua5.4 hub"),
            ) {
                speedup.push("lua5.4 coroutines (1 core)", x, one / co);
            }
        }
    }
    findings.figures.push(bars(
        "seed002-speedup",
        "Speed-up over each system's own serial run",
        "speed-up (higher is better)",
        categories.clone(),
        &speedup,
    ));
    findings.verdict = verdict(
        &wall,
        &speedup,
        &format!("lutra, {workers:.0} workers"),
        index("fib"),
    );
    findings.grids.push(spread_grid(
        "Speed-up over the system's own serial run, in the same round",
        "system",
        &speedup,
        |x| categories.get(x as usize).cloned().unwrap_or_default(),
        times,
    ));
    findings.grids.push(spread_grid(
        "Elapsed seconds",
        "system",
        &wall,
        |x| categories.get(x as usize).cloned().unwrap_or_default(),
        |v| format!("{v:.3}"),
    ));
    check_sizes(inputs, lua_rounds, &mut findings);
    findings.notes.push(format!(
        "Parallel runs use {} workers / Ractors / mappers as luabench does (2 × cores); \
         the spread is over {} rounds.",
        2 * inputs.cores.max(2),
        lua_rounds.len()
    ));
    findings
}

/// The fib hub's verdict: `lutra` (the series of the parallel runs) against lua5.4's
/// serial loop, and each system's speed-up over its own serial run when Ruby ran.
fn verdict(wall: &Samples, speedup: &Samples, lutra: &str, fib: Option<f64>) -> Option<String> {
    let fib = fib?;
    let ratio = median(wall, "lua5.4 serial", fib)? / median(wall, lutra, fib)?;
    let mut line = speed(lutra, "lua5.4's serial loop", ratio, "on the fib hub");
    if let (Some(ours), Some(ruby)) = (
        median(speedup, lutra, fib),
        median(speedup, "ruby ractors", fib),
    ) {
        line.push_str(&format!(
            "; over its own serial run, lutra speeds up {ours:.2}x, Ruby's Ractors {ruby:.2}x"
        ));
    }
    Some(line)
}

/// Notes a difference between luabench's sizes and the Ruby programs'.
fn check_sizes(inputs: &Inputs<'_>, lua_rounds: &[Table], findings: &mut Findings) {
    if inputs.rounds(Job::Ruby).is_empty() {
        return;
    }
    let groups: BTreeMap<String, String> = lua_rounds
        .iter()
        .flat_map(Table::records)
        .map(|r| (r.get("experiment").to_owned(), r.get("group").to_owned()))
        .collect();
    for (exp, expected) in [
        ("fib", ruby::fib_group(inputs.scale)),
        ("wc", ruby::wc_group(inputs.scale)),
    ] {
        if let Some(group) = groups.get(exp).filter(|g| **g != expected) {
            findings.notes.push(format!(
                "size mismatch: luabench ran {exp} as {group}, the Ruby programs as {expected}; \
                 compare speed-ups only"
            ));
        }
    }
}
