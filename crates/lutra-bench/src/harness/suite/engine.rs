//! The engine: the C benchmark (`cbench`) run against Lutra's C ABI, GCC's libitm and
//! sequential code, and the instructions per operation (`cbench --count`). `cbench`
//! belongs to the C-API work; its CSV is read by column name (a workload column, a
//! system column, `threads`, and the first throughput column), so that the figure
//! follows its format. Without the binary the experiment says "not available".

use super::chart::Layout;
use super::experiment::{
    Experiment, Findings, Grid, Inputs, gather, missing, spread_grid, thread_lines, threads,
};
use super::jobs::Job;
use super::spread::Samples;
use super::verdict::{largest_x, median, speed};
use crate::harness::csv::{Record, Table};

/// The experiment.
pub const EXPERIMENT: Experiment = Experiment {
    id: "engine",
    title: "The engine against GCC's libitm and sequential code",
    paper: "the engine (tinySTM's C interface, stm.h)",
    shows: "What a transaction costs through the C interface compared with GCC's \
            transactional memory runtime (libitm) and with no synchronization at all, \
            and how each scales with threads; instruction counts per operation show the \
            fast path's cost without timing noise.",
    reference: "sequential code and libitm on the same workloads, in the same round.",
    jobs: &[Job::Cbench, Job::CbenchCount],
    analyze,
};

fn first_column(table: &Table, names: &[&str]) -> Option<String> {
    names
        .iter()
        .find(|name| table.has(name))
        .map(|name| (*name).to_owned())
}

fn analyze(inputs: &Inputs<'_>) -> Findings {
    let mut findings = Findings::default();
    match missing(inputs, Job::Cbench) {
        Some(note) => findings.notes.push(note),
        None => throughput(inputs.rounds(Job::Cbench), &mut findings),
    }
    match missing(inputs, Job::CbenchCount) {
        Some(note) => findings.notes.push(note),
        None => counts(inputs, &mut findings),
    }
    findings
}

/// The first workload's verdict: Lutra's throughput against GCC's libitm at 1 thread
/// and at the most threads measured.
fn engine_verdict(samples: &Samples, workload: &str) -> Option<String> {
    let at = |x: f64| Some(median(samples, "lutra", x)? / median(samples, "libitm", x)?);
    let most = largest_x(samples, "lutra")?;
    let mut line = speed(
        "Lutra",
        "GCC's libitm",
        at(1.0)?,
        &format!("on {workload} at 1 thread"),
    );
    if most > 1.0 {
        let ratio = at(most)?;
        line.push_str(&format!(
            "; {} at {most:.0} threads",
            if ratio >= 1.0 {
                format!("{ratio:.2}x faster")
            } else {
                format!("behind: {ratio:.2}x its speed")
            }
        ));
    }
    Some(line)
}

fn throughput(rounds: &[Table], findings: &mut Findings) {
    let Some(first) = rounds.first() else { return };
    let workload = first_column(first, &["workload", "bench", "structure"]);
    let system = first_column(first, &["system", "impl", "contender", "mode"]);
    let value = first
        .columns()
        .iter()
        .find(|c| c.contains("per_sec") || c.contains("throughput"))
        .cloned();
    let (Some(workload), Some(system), Some(value)) = (workload, system, value) else {
        findings.notes.push(format!(
            "cbench's CSV has no workload/system/throughput columns (columns: {})",
            first.columns().join(", ")
        ));
        return;
    };
    let mut workloads: Vec<String> = Vec::new();
    for record in rounds.iter().flat_map(Table::records) {
        if !workloads.iter().any(|w| w == record.get(&workload)) {
            workloads.push(record.get(&workload).to_owned());
        }
    }
    for (index, name) in workloads.iter().enumerate() {
        let keep = |r: &Record<'_>| r.get(&workload) == name;
        let samples = gather(
            rounds,
            keep,
            |r| r.get(&system).to_owned(),
            |r| r.num("threads").or(Some(1.0)),
            |r| r.num(&value),
        );
        let id = if index == 0 {
            "engine-throughput".to_owned()
        } else {
            format!("engine-{}", slug(name))
        };
        let mut figure = thread_lines(
            &id,
            &format!(
                "C benchmark, {name}: {} (log scale)",
                value.replace('_', " ")
            ),
            &value.replace('_', " "),
            "threads",
            &samples,
        );
        // Sequential code runs an order of magnitude faster than any transaction.
        if let Layout::Lines { log_y, .. } = &mut figure.layout {
            *log_y = true;
        }
        findings.figures.push(figure);
        if index == 0 {
            findings.verdict = engine_verdict(&samples, name);
        }
        findings.grids.push(spread_grid(
            &format!("{name}: {value} (median, min–max)"),
            "system",
            &samples,
            threads,
            super::chart::si,
        ));
    }
    findings.notes.push(format!(
        "The spread is over {} rounds of cbench.",
        rounds.len()
    ));
}

fn counts(inputs: &Inputs<'_>, findings: &mut Findings) {
    let rounds = inputs.rounds(Job::CbenchCount);
    match rounds.first().filter(|table| !table.is_empty()) {
        Some(table) => findings.grids.push(count_grid(table)),
        None => {
            let output = inputs
                .data
                .get(&Job::CbenchCount)
                .map(|data| data.output.clone())
                .unwrap_or_default();
            let lines: Vec<&str> = output
                .lines()
                .filter(|l| !l.starts_with("$ "))
                .take(60)
                .collect();
            findings.verbatim = Some(lines.join("\n"));
        }
    }
}

/// The instruction counts: one row per operation and one column per system when the
/// CSV has `operation`, `column` and `instructions_per_op` (and a `target`), else
/// the CSV as it is.
fn count_grid(table: &Table) -> Grid {
    let caption = "Instructions per operation (callgrind; deterministic, one round)".to_owned();
    let long = ["operation", "column", "instructions_per_op"];
    if !long.iter().all(|c| table.has(c)) {
        return Grid {
            caption,
            header: table.columns().to_vec(),
            rows: table
                .records()
                .map(|r| {
                    table
                        .columns()
                        .iter()
                        .map(|c| r.get(c).to_owned())
                        .collect()
                })
                .collect(),
        };
    }
    let mut systems: Vec<String> = Vec::new();
    let mut operations: Vec<String> = Vec::new();
    for r in table.records() {
        if !systems.iter().any(|s| s == r.get("column")) {
            systems.push(r.get("column").to_owned());
        }
        if !operations.iter().any(|o| o == r.get("operation")) {
            operations.push(r.get("operation").to_owned());
        }
    }
    let mut header = vec!["operation".to_owned()];
    header.extend(systems.iter().cloned());
    header.push("target".into());
    let rows = operations
        .iter()
        .map(|operation| {
            let of = |r: &Record<'_>| r.get("operation") == operation;
            let mut row = vec![operation.clone()];
            row.extend(systems.iter().map(|system| {
                table
                    .records()
                    .find(|r| of(r) && r.get("column") == system)
                    .map(|r| r.get("instructions_per_op"))
                    .filter(|v| !v.is_empty())
                    .unwrap_or("–")
                    .to_owned()
            }));
            let target = table.records().find(of).map_or("", |r| r.get("target"));
            row.push(if target.is_empty() { "–" } else { target }.to_owned());
            row
        })
        .collect();
    Grid {
        caption,
        header,
        rows,
    }
}

fn slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::suite::jobs::{JobData, Scale};
    use std::collections::BTreeMap;

    fn data(rounds: Vec<&str>) -> JobData {
        JobData {
            rounds: rounds
                .into_iter()
                .map(|t| Table::parse(t).unwrap())
                .collect(),
            ..JobData::default()
        }
    }

    #[test]
    fn reads_cbench_by_column_name_and_shows_counts_as_a_table() {
        let header = "workload,system,threads,ops,seconds,ops_per_sec,vs_seq,vs_libitm,aborts\n";
        let round = |lutra: f64| {
            format!(
                "{header}bank64,sequential,1,10,1,100.0,1,,0\nbank64,lutra,1,10,1,{lutra},0.5,1.2,0\n\
                 bank64,lutra,2,10,1,{},0.9,1.1,3\nlist10,libitm,1,10,1,40.0,,1,0\n",
                lutra * 1.5
            )
        };
        let (r1, r2, r3) = (round(50.0), round(60.0), round(55.0));
        let mut all = BTreeMap::new();
        all.insert(Job::Cbench, data(vec![&r1, &r2, &r3]));
        all.insert(
            Job::CbenchCount,
            data(vec![
                "operation,column,instructions_per_op,target\nread,lutra,12.5,20\n\
                 read,libitm,4.0,20\nwrite,lutra,30.0,\n",
            ]),
        );
        let inputs = Inputs {
            data: &all,
            scale: Scale::Quick,
            cores: 2,
        };
        let findings = analyze(&inputs);
        let ids: Vec<&str> = findings.figures.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["engine-throughput", "engine-list10"]);
        let lutra = findings.figures[0]
            .series
            .iter()
            .find(|s| s.name == "lutra")
            .unwrap();
        let one = lutra.points[0].1;
        assert_eq!(
            (one.min, one.median, one.max, one.rounds),
            (50.0, 55.0, 60.0, 3)
        );
        let counts = findings.grids.last().unwrap();
        assert_eq!(counts.header, ["operation", "lutra", "libitm", "target"]);
        assert_eq!(
            counts.rows,
            vec![
                vec!["read", "12.5", "4.0", "20"],
                vec!["write", "30.0", "–", "–"]
            ]
        );
    }

    #[test]
    fn the_verdict_compares_lutra_with_libitm_from_the_medians() {
        let header = "workload,system,threads,ops,seconds,ops_per_sec\n";
        let round = |lutra1: f64, lutra2: f64| {
            format!(
                "{header}bank4096,lutra,1,1,1,{lutra1}\nbank4096,libitm,1,1,1,100\n\
                 bank4096,lutra,2,1,1,{lutra2}\nbank4096,libitm,2,1,1,50\n"
            )
        };
        let rounds = [round(40.0, 90.0), round(50.0, 110.0), round(60.0, 100.0)];
        let mut all = BTreeMap::new();
        all.insert(
            Job::Cbench,
            data(rounds.iter().map(String::as_str).collect()),
        );
        let inputs = Inputs {
            data: &all,
            scale: Scale::Quick,
            cores: 2,
        };
        assert_eq!(
            analyze(&inputs).verdict.as_deref(),
            Some(
                "Lutra behind GCC's libitm on bank4096 at 1 thread: 0.50x its speed; \
                 2.00x faster at 2 threads"
            )
        );
        assert_eq!(
            analyze(&Inputs {
                data: &BTreeMap::new(),
                ..inputs
            })
            .verdict,
            None
        );
    }

    #[test]
    fn without_cbench_the_experiment_says_not_available() {
        let all = BTreeMap::new();
        let inputs = Inputs {
            data: &all,
            scale: Scale::Quick,
            cores: 2,
        };
        let findings = analyze(&inputs);
        assert!(findings.figures.is_empty());
        assert_eq!(findings.notes.len(), 2);
        assert!(
            findings
                .notes
                .iter()
                .all(|n| n.starts_with("not available"))
        );
    }
}
