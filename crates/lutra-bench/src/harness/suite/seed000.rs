//! Seed 000 (CRuby's global lock elided with HTM): the While and Iterator loops under
//! the elided global lock at transaction lengths 1, 16, 256 and dynamic, beside the
//! lock alone, at 1–8 threads (the paper's Figs. 5–6 in shape), from the `gil`
//! binary; and While with a shared counter touched every 256 steps (real conflicts),
//! where the per-site length has something to adapt to: its adaptation over the loop
//! site's transactions (Fig. 3: start at 255, ×0.75 past 3 aborts, only during the
//! first 300 transactions) comes from `gil --trace`.

use super::chart::{Figure, Layout};
use super::experiment::{
    Experiment, Findings, Inputs, gather, missing, series_of, spread_grid, thread_lines, threads,
    times,
};
use super::jobs::Job;
use super::verdict::{largest_x, median, speed};

/// The experiment.
pub const EXPERIMENT: Experiment = Experiment {
    id: "seed000",
    title: "Elided global lock: While and Iterator",
    paper: "\"Eliminating Global Interpreter Locks in Ruby through Hardware Transactional \
            Memory\" (Odaira, Castanos)",
    shows: "Whether running the interpreter's global lock as transactions lets threads \
            that share nothing run in parallel, and which transaction length (yield \
            points per transaction: 1, 16, 256, or adapted per site) pays best: short \
            transactions pay begin/commit often, long ones lose more work per abort.",
    reference: "the same loops under the lock alone (elision off), in the same run, \
                round by round.",
    jobs: &[Job::Gil],
    analyze,
};

fn analyze(inputs: &Inputs<'_>) -> Findings {
    let mut findings = Findings::default();
    if let Some(note) = missing(inputs, Job::Gil) {
        findings.notes.push(note);
        return findings;
    }
    let rounds = inputs.rounds(Job::Gil);
    for (workload, title) in [
        ("while", "While"),
        ("iterator", "Iterator"),
        ("conflict", "While with a shared counter"),
    ] {
        let running = |r: &crate::harness::csv::Record<'_>| {
            r.get("workload") == workload
                && r.get("idle_thread") == "0"
                && r.get("contender") != "no lock"
        };
        let throughput = gather(
            rounds,
            running,
            |r| r.get("contender").to_owned(),
            |r| r.num("threads"),
            |r| r.num("steps_per_sec"),
        );
        findings.figures.push(thread_lines(
            &format!("seed000-{workload}"),
            &format!("{title} under the global lock: steps/s (median, min–max)"),
            "steps per second",
            "threads",
            &throughput,
        ));
        let versus = gather(
            rounds,
            |r| running(r) && r.get("contender") != "lock alone",
            |r| r.get("contender").to_owned(),
            |r| r.num("threads"),
            |r| r.num("vs_lock"),
        );
        if workload == "while" {
            findings.verdict = largest_x(&versus, "dynamic").and_then(|x| {
                let ratio = median(&versus, "dynamic", x)?;
                Some(speed(
                    "The elided lock (length adapted per site)",
                    "the lock alone",
                    ratio,
                    &format!("on While at {}", threads(x)),
                ))
            });
        }
        findings.grids.push(spread_grid(
            &format!("{title}: throughput ÷ the lock alone in the same round"),
            "contender",
            &versus,
            threads,
            times,
        ));
        let lengths = gather(
            rounds,
            |r| running(r) && r.get("contender") == "dynamic",
            |_| "dynamic length at the end".to_owned(),
            |r| r.num("threads"),
            |r| r.num("dynamic_length"),
        );
        if !lengths.is_empty() {
            findings.grids.push(spread_grid(
                &format!("{title}: the loop site's adapted length when the run ended"),
                "",
                &lengths,
                threads,
                |v| format!("{v:.0}"),
            ));
        }
        let cores = gather(
            rounds,
            |r| running(r) && r.get("contender") == "dynamic",
            |_| "cores used (dynamic)".to_owned(),
            |r| r.num("threads"),
            |r| Some(r.num("cpu_seconds")? / r.num("seconds")?.max(1e-9)),
        );
        if !cores.is_empty() {
            findings.grids.push(spread_grid(
                &format!("{title}: processors the dynamic runs kept busy (CPU time ÷ elapsed)"),
                "",
                &cores,
                threads,
                |v| format!("{v:.2}"),
            ));
        }
    }
    findings.notes.push(format!(
        "One round runs every contender at every thread count; the spread is over {} \
         rounds.",
        rounds.len()
    ));
    // One round's trace: the rounds' runs end at different lengths, and their points
    // interleaved by transaction count would zigzag between them.
    let trace = gather(
        &rounds[..rounds.len().min(1)],
        |r| r.get("bench") == "gil-trace",
        |r| format!("{} threads", r.get("threads")),
        |r| r.num("transactions"),
        |r| r.num("dynamic_length"),
    );
    if !trace.is_empty() {
        findings.figures.push(Figure {
            id: "seed000-length".into(),
            title: "The loop site's dynamic length over its transactions (shared counter)".into(),
            y_label: "transaction length (yield points)".into(),
            layout: Layout::Lines {
                x_label: "transactions begun at the site (log scale)".into(),
                log_x: true,
                log_y: false,
            },
            series: series_of(&trace),
        });
    }
    findings.notes.push(
        "The length chart samples the loop site after each loop of one thread, in the \
         first round's run: it starts at 255, shrinks by a quarter whenever more than 3 aborts \
         were seen, and stops adapting after the site's first 300 transactions (seed \
         000, Fig. 3)."
            .into(),
    );
    findings
}
