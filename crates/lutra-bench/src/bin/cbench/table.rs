//! The report of the timed runs: a table per workload (throughput, then ratios), the
//! issue's targets beside what was measured, and the CSV file.
//!
//! | column | definition |
//! |--------|------------|
//! | `ops_per_sec` | transactions (operations) per second, best round |
//! | `vs_seq` | `ops_per_sec` ÷ the sequential build's at 1 thread, same workload |
//! | `vs_ceiling` | `ops_per_sec` ÷ the sequential build's at the same thread count (beyond one thread: a copy of the state per thread, nothing shared), up to 8 threads |
//! | `vs_libitm` | `ops_per_sec` ÷ libitm's (default method) at the same thread count |
//! | `vs_tinystm` | `ops_per_sec` ÷ tinySTM's at the same thread count (empty without the tinySTM column) |
//! | `aborts` | aborted attempts (Lutra's per-thread counters, tinySTM's when built with its statistics; empty when unknown) |
//!
//! The tinySTM rows (`tinystm tx/s`, `lutra ÷ tinystm`, `tinystm aborts`) appear
//! only when tinySTM ran (`TINYSTM_SRC`, `bench/c/README.md`); the targets then ask
//! Lutra for [`TINYSTM_AIM`] times tinySTM's throughput at 2 threads on every
//! workload.
//!
//! Each table also compares the ways of linking Lutra, at the same thread count:
//! `lutra-so ÷ lutra-a` (`liblutra.so` against `liblutra.a`, both without
//! `LUTRA_INLINE`) and `so-inline ÷ lutra` (both with it): the median of the
//! ratios taken within each round (the two runs alternate in a round), and the
//! targets give the least one too.
//!
//! The targets' line for time against the sequential build gives the floor's time
//! too (the sequential code with every access behind `stm.h`'s inline test, and no
//! transaction begin or commit): what no one-thread STM with inline accesses can
//! beat, so a target below it cannot be met by a faster begin or commit.

use crate::run::{
    FLOOR, LIBITM, LIBITM_ML_WT, LUTRA, LUTRA_ITM, LUTRA_SHARED, LUTRA_SHARED_INLINE, LUTRA_STATIC,
    Measurement, Results, Rounds, SEQ, SYSTEMS, TINYSTM, WORKLOADS,
};
use lutra_bench::harness::csv::{Csv, Fields, optional, or_empty};
use lutra_bench::harness::table::{GridLine, ratio, si, thread_headers, write_grid};
use std::io;
use std::path::Path;

fn get(results: &Results, workload: usize, system: usize, threads: usize) -> Option<Measurement> {
    results.get(&(workload, system, threads)).copied()
}

/// `vs_seq` of a run.
fn vs_seq(results: &Results, workload: usize, run: Measurement) -> Option<f64> {
    get(results, workload, SEQ, 1).map(|seq| run.throughput() / seq.throughput())
}

/// `vs_ceiling` of a run.
fn vs_ceiling(results: &Results, workload: usize, threads: usize, run: Measurement) -> Option<f64> {
    get(results, workload, SEQ, threads).map(|seq| run.throughput() / seq.throughput())
}

/// Lutra's least throughput ÷ tinySTM's at 2 threads, on every workload.
pub(crate) const TINYSTM_AIM: f64 = 1.1;

/// `vs_tinystm` of a run.
fn vs_tinystm(results: &Results, workload: usize, threads: usize, run: Measurement) -> Option<f64> {
    get(results, workload, TINYSTM, threads).map(|tiny| run.throughput() / tiny.throughput())
}

/// Whether tinySTM ran on `workload` at any thread count.
fn tinystm_ran(results: &Results, workload: usize) -> bool {
    results
        .keys()
        .any(|&(w, system, _)| w == workload && system == TINYSTM)
}

/// `vs_libitm` of a run.
fn vs_libitm(results: &Results, workload: usize, threads: usize, run: Measurement) -> Option<f64> {
    get(results, workload, LIBITM, threads).map(|itm| run.throughput() / itm.throughput())
}

/// `system`'s throughput ÷ `base`'s in each round, same workload and thread count,
/// sorted; empty if either did not run.
fn round_ratios(
    rounds: &Rounds,
    workload: usize,
    threads: usize,
    system: usize,
    base: usize,
) -> Vec<f64> {
    let (Some(runs), Some(bases)) = (
        rounds.get(&(workload, system, threads)),
        rounds.get(&(workload, base, threads)),
    ) else {
        return Vec::new();
    };
    let mut ratios: Vec<f64> = runs
        .iter()
        .zip(bases)
        .map(|(run, base)| run / base)
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios
}

/// The median of sorted `values`, if any.
fn median(values: &[f64]) -> Option<f64> {
    let middle = values.len() / 2;
    match values.len() {
        0 => None,
        n if n % 2 == 1 => Some(values[middle]),
        _ => Some((values[middle - 1] + values[middle]) / 2.0),
    }
}

/// The pairs of link modes compared in each table and in the targets: the shared
/// library against the static one, without and with `LUTRA_INLINE`.
const LINK_PAIRS: [(usize, usize, &str); 2] = [
    (LUTRA_SHARED, LUTRA_STATIC, "lutra-so ÷ lutra-a"),
    (LUTRA_SHARED_INLINE, LUTRA, "so-inline ÷ lutra"),
];

fn workload_table(
    results: &Results,
    rounds: &Rounds,
    workload: usize,
    threads: &[usize],
) -> String {
    let mut out = String::new();
    let cells = |system: usize, cell: &dyn Fn(Measurement) -> String| -> Vec<String> {
        threads
            .iter()
            .map(|&count| get(results, workload, system, count).map_or(String::new(), cell))
            .collect()
    };
    let tinystm = tinystm_ran(results, workload);
    let mut lines: Vec<GridLine> = (0..SYSTEMS.len())
        .filter(|&system| system != TINYSTM || tinystm)
        .map(|system| {
            (
                if system == SEQ {
                    "seq (copies) tx/s".to_owned()
                } else {
                    format!("{} tx/s", SYSTEMS[system])
                },
                cells(system, &|run| si(run.throughput())),
            )
        })
        .collect();
    for system in [LUTRA, LUTRA_ITM, LIBITM, LIBITM_ML_WT, FLOOR] {
        lines.push((
            format!("{} ÷ seq", SYSTEMS[system]),
            cells(system, &|run| ratio(vs_seq(results, workload, run))),
        ));
    }
    type Versus = fn(&Results, usize, usize, Measurement) -> Option<f64>;
    let row = |system: usize, versus: Versus| -> Vec<String> {
        threads
            .iter()
            .map(|&count| {
                ratio(
                    get(results, workload, system, count)
                        .and_then(|run| versus(results, workload, count, run)),
                )
            })
            .collect()
    };
    lines.push(("lutra ÷ libitm".to_owned(), row(LUTRA, vs_libitm)));
    lines.push(("lutra-itm ÷ libitm".to_owned(), row(LUTRA_ITM, vs_libitm)));
    if tinystm {
        lines.push(("lutra ÷ tinystm".to_owned(), row(LUTRA, vs_tinystm)));
    }
    let lutra_vs_ceiling = threads
        .iter()
        .map(|&count| {
            ratio(
                get(results, workload, LUTRA, count)
                    .and_then(|run| vs_ceiling(results, workload, count, run)),
            )
        })
        .collect();
    lines.push(("lutra ÷ seq copies".to_owned(), lutra_vs_ceiling));
    for (system, base, label) in LINK_PAIRS {
        let cells = threads
            .iter()
            .map(|&count| ratio(median(&round_ratios(rounds, workload, count, system, base))))
            .collect();
        lines.push((label.to_owned(), cells));
    }
    lines.push((
        "lutra aborts".to_owned(),
        cells(LUTRA, &|run| {
            run.aborts.map_or(String::new(), |n| si(n as f64))
        }),
    ));
    if tinystm {
        lines.push((
            "tinystm aborts".to_owned(),
            cells(TINYSTM, &|run| {
                run.aborts.map_or(String::new(), |n| si(n as f64))
            }),
        ));
    }
    write_grid(
        &mut out,
        &format!("{} / threads", WORKLOADS[workload]),
        &thread_headers(threads),
        &lines,
    );
    out
}

/// The targets for the C benchmark, each with what this run measured.
fn targets(results: &Results, rounds: &Rounds, workloads: &[usize]) -> String {
    let mut out = String::from("targets (a quiet machine decides):\n");
    let index = |name: &str| WORKLOADS.iter().position(|w| *w == name);
    let mut line = |text: String, met: Option<bool>| {
        let mark = match met {
            Some(true) => "met",
            Some(false) => "NOT MET",
            None => "not run",
        };
        out.push_str(&format!("  {text:<76} {mark}\n"));
    };
    for (name, floor) in [("bank64", 15e6), ("bank4096", 1.1e6)] {
        let run = index(name).and_then(|w| get(results, w, LUTRA, 1));
        line(
            format!(
                "{name}, 1 thread: lutra {} tx/s ≥ {}",
                run.map_or("-".into(), |r| si(r.throughput())),
                si(floor)
            ),
            run.map(|r| r.throughput() >= floor),
        );
    }
    if let Some(bank) = index("bank4096") {
        for threads in [1, 2] {
            for ((system, base, label), least) in LINK_PAIRS.into_iter().zip([0.95, 0.9]) {
                let ratios = round_ratios(rounds, bank, threads, system, base);
                let measured = median(&ratios);
                line(
                    format!(
                        "bank4096, {threads} thread(s): {label} {} ≥ {least} (min {}, {} rounds)",
                        ratio(measured),
                        ratio(ratios.first().copied()),
                        ratios.len()
                    ),
                    measured.map(|r| r >= least),
                );
            }
        }
    }
    for &workload in workloads {
        if tinystm_ran(results, workload) {
            let measured = get(results, workload, LUTRA, 2)
                .and_then(|run| vs_tinystm(results, workload, 2, run));
            line(
                format!(
                    "{}, 2 threads: lutra ÷ tinystm {} ≥ {TINYSTM_AIM}",
                    WORKLOADS[workload],
                    ratio(measured)
                ),
                measured.map(|r| r >= TINYSTM_AIM),
            );
        }
        for threads in [1, 2] {
            let ratio_itm = get(results, workload, LUTRA, threads)
                .and_then(|run| vs_libitm(results, workload, threads, run));
            line(
                format!(
                    "{}, {threads} thread(s): lutra ÷ libitm {} > 1",
                    WORKLOADS[workload],
                    ratio(ratio_itm)
                ),
                ratio_itm.map(|r| r > 1.0),
            );
        }
        if WORKLOADS[workload].starts_with("bank") {
            continue;
        }
        let slowdown = |system| {
            get(results, workload, system, 1)
                .and_then(|run| vs_seq(results, workload, run))
                .map(|r| 1.0 / r)
        };
        let floor = slowdown(FLOOR).map_or(String::new(), |floor| format!(" (floor {floor:.2})"));
        line(
            format!(
                "{}, 1 thread: lutra time ÷ seq {} ≤ 1.5{floor}",
                WORKLOADS[workload],
                ratio(slowdown(LUTRA))
            ),
            slowdown(LUTRA).map(|s| s <= 1.5),
        );
    }
    out
}

fn csv_records(results: &Results) -> Vec<Fields> {
    results
        .iter()
        .map(|(&(workload, system, threads), &run)| {
            lutra_bench::fields![
                WORKLOADS[workload],
                SYSTEMS[system],
                threads,
                run.ops,
                format!("{:.6}", run.seconds),
                format!("{:.1}", run.throughput()),
                optional(vs_seq(results, workload, run), 4),
                optional(vs_libitm(results, workload, threads, run), 4),
                optional(vs_ceiling(results, workload, threads, run), 4),
                or_empty(run.aborts),
                optional(vs_tinystm(results, workload, threads, run), 4),
            ]
        })
        .collect()
}

/// Prints the tables and targets, and writes the CSV file at `path`.
///
/// # Errors
/// Any I/O error writing the file.
pub(crate) fn report(
    results: &Results,
    rounds: &Rounds,
    workloads: &[usize],
    threads: &[usize],
    path: &Path,
) -> io::Result<()> {
    for &workload in workloads {
        println!("{}", workload_table(results, rounds, workload, threads));
    }
    println!("{}", targets(results, rounds, workloads));
    let mut csv = Csv::with_header(
        path,
        "workload,system,threads,ops,seconds,ops_per_sec,vs_seq,vs_libitm,vs_ceiling,aborts,vs_tinystm",
    )?;
    csv.write_records(csv_records(results))?;
    drop(csv);
    println!("CSV: {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_modes_are_compared_round_by_round() {
        let mut rounds = Rounds::new();
        rounds.insert((1, LUTRA_SHARED, 2), vec![50.0, 90.0, 30.0]);
        rounds.insert((1, LUTRA_STATIC, 2), vec![100.0, 100.0, 20.0]);
        let ratios = round_ratios(&rounds, 1, 2, LUTRA_SHARED, LUTRA_STATIC);
        assert_eq!(ratios, vec![0.5, 0.9, 1.5]);
        assert_eq!(median(&ratios), Some(0.9));
        assert_eq!(median(&[0.5, 0.7]), Some(0.6));
        assert_eq!(median(&[]), None);
        assert!(round_ratios(&rounds, 1, 1, LUTRA_SHARED, LUTRA_STATIC).is_empty());
    }

    fn measured(ops: u64) -> Measurement {
        Measurement {
            ops,
            seconds: 1.0,
            aborts: None,
        }
    }

    #[test]
    fn the_tinystm_rows_and_target_appear_only_when_tinystm_ran() {
        let mut results = Results::new();
        results.insert((0, LUTRA, 2), measured(1100));
        results.insert((1, LUTRA, 2), measured(1000));
        let without = workload_table(&results, &Rounds::new(), 0, &[2]);
        assert!(!without.contains("tinystm"), "{without}");
        assert!(!targets(&results, &Rounds::new(), &[0, 1]).contains("tinystm"));
        results.insert((0, TINYSTM, 2), measured(1000));
        results.insert((1, TINYSTM, 2), measured(1000));
        let with = workload_table(&results, &Rounds::new(), 0, &[2]);
        assert!(with.contains("lutra ÷ tinystm"), "{with}");
        let aims = targets(&results, &Rounds::new(), &[0, 1]);
        let line = |name: &str| {
            aims.lines()
                .find(|line| line.contains(&format!("{name}, 2 threads: lutra ÷ tinystm")))
                .unwrap_or_else(|| panic!("no {name} line in {aims}"))
                .to_owned()
        };
        assert!(line("bank64").ends_with(" met"), "{aims}");
        assert!(line("bank4096").ends_with("NOT MET"), "{aims}");
    }
}
