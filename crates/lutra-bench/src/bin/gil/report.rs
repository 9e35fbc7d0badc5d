//! The loops' tables (a grid per workload, the single-thread block, the trace) and
//! their CSV records.

use crate::run::{Contender, LOCKED, Row};
use lutra_bench::fields;
use lutra_bench::harness::csv::{Fields, optional};
use lutra_bench::harness::table::{GridLine, ratio, si, thread_headers, write_grid};
use lutra_bench::workloads::gil_loops::{CHUNK, GilLoop as Workload, SITE};
use lutra_elide::global::{AbortClass, FallbackCause, SiteStats};
use std::fmt::Write as _;
use std::time::Duration;

fn find(rows: &[Row], contender: Contender, threads: usize) -> Option<&Row> {
    rows.iter()
        .find(|row| row.contender == contender && row.threads == threads)
}

/// One workload: steps/s, ratio to the lock alone, aborts and fallbacks (counts), the
/// dynamic lengths reached.
pub(crate) fn grid_table(
    workload: Workload,
    backend: &str,
    rows: &[Row],
    threads: &[usize],
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "== {} · {backend} backend · {CHUNK} steps per loop · threads →",
        workload.name()
    );
    let headers = thread_headers(threads);
    let cells = |contender: Contender, cell: &dyn Fn(&Row) -> String| -> GridLine {
        let cells = threads
            .iter()
            .map(|&count| find(rows, contender, count).map_or(String::new(), cell))
            .collect();
        (contender.label(), cells)
    };
    let throughput: Vec<GridLine> = LOCKED
        .iter()
        .map(|&contender| cells(contender, &|row| si(row.sample.steps_per_sec())))
        .collect();
    write_grid(&mut out, "steps/s", &headers, &throughput);
    let versus_lock: Vec<GridLine> = LOCKED[1..]
        .iter()
        .map(|&contender| {
            cells(contender, &|row| {
                let lock = find(rows, Contender::Lock, row.threads);
                ratio(lock.map(|lock| row.sample.steps_per_sec() / lock.sample.steps_per_sec()))
            })
        })
        .collect();
    write_grid(&mut out, "÷ lock alone", &headers, &versus_lock);
    let best: Vec<String> = threads
        .iter()
        .map(|&count| {
            let best_fixed = LOCKED[1..4]
                .iter()
                .filter_map(|&contender| find(rows, contender, count))
                .map(|row| row.sample.steps_per_sec())
                .fold(0.0, f64::max);
            let dynamic = find(rows, Contender::Dynamic, count);
            ratio(dynamic.map(|row| row.sample.steps_per_sec() / best_fixed))
        })
        .collect();
    write_grid(
        &mut out,
        "dynamic ÷ best fixed",
        &headers,
        &[("".into(), best)],
    );
    for (corner, count) in [
        ("aborts", SiteStats::total_aborts as fn(&SiteStats) -> u64),
        ("fallbacks", SiteStats::fallbacks),
    ] {
        let lines: Vec<GridLine> = LOCKED
            .iter()
            .map(|&contender| {
                cells(contender, &|row| {
                    row.sample
                        .total()
                        .map_or(String::new(), |total| counted(count(&total)))
                })
            })
            .collect();
        write_grid(&mut out, corner, &headers, &lines);
    }
    let transactions: Vec<GridLine> = LOCKED
        .iter()
        .map(|&contender| {
            cells(contender, &|row| {
                row.sample
                    .total()
                    .map_or(String::new(), |total| counted(total.transactions))
            })
        })
        .collect();
    write_grid(&mut out, "transactions", &headers, &transactions);
    let cores: Vec<GridLine> = LOCKED
        .iter()
        .map(|&contender| {
            cells(contender, &|row| {
                row.sample
                    .cores_used()
                    .map_or(String::new(), |cores| format!("{cores:.2}"))
            })
        })
        .collect();
    write_grid(&mut out, "cores used", &headers, &cores);
    let lengths = cells(Contender::Dynamic, &|row| {
        row.sample
            .stats
            .as_ref()
            .and_then(|stats| stats.by_site.get(&SITE))
            .map_or(String::new(), |site| site.length.to_string())
    });
    write_grid(&mut out, "dynamic length", &headers, &[lengths]);
    out
}

/// A count: exact below 10 000, then with an SI suffix.
fn counted(n: u64) -> String {
    lutra_bench::harness::table::count(n, 10_000)
}

/// One running thread: steps/s per workload and the ratio to no lock at all.
pub(crate) fn single_table(workloads: &[Workload], rows: &[Row]) -> String {
    let mut out = String::from("== single thread · steps/s and ÷ no lock\n");
    let mut headers = Vec::new();
    for workload in workloads {
        headers.push(workload.name().to_string());
        headers.push("÷ none".to_string());
    }
    let mut labels: Vec<(Contender, bool)> = Vec::new();
    for row in rows {
        if !labels.contains(&(row.contender, row.idle)) {
            labels.push((row.contender, row.idle));
        }
    }
    let lines: Vec<GridLine> = labels
        .iter()
        .map(|&(contender, idle)| {
            let mut cells = Vec::new();
            for &workload in workloads {
                let mine = rows.iter().find(|row| {
                    row.workload == workload && row.contender == contender && row.idle == idle
                });
                let none = rows
                    .iter()
                    .find(|row| row.workload == workload && row.contender == Contender::NoLock);
                cells.push(mine.map_or(String::new(), |row| si(row.sample.steps_per_sec())));
                cells.push(ratio(mine.zip(none).map(|(mine, none)| {
                    mine.sample.steps_per_sec() / none.sample.steps_per_sec()
                })));
            }
            let label = match (contender, idle) {
                (Contender::Lock, _) => "lock (1 live)".to_string(),
                (_, true) => format!("{} +idle", contender.label()),
                _ => contender.label(),
            };
            (label, cells)
        })
        .collect();
    write_grid(&mut out, "1 running thread", &headers, &lines);
    out
}

/// The trace's transactions at which the length changed, and the last sample.
pub(crate) fn trace_table(
    workload: Workload,
    threads: usize,
    points: &[(Duration, SiteStats)],
) -> String {
    let mut out = format!(
        "== dynamic length of the loop site over its transactions ({}, {threads} threads)\n",
        workload.name()
    );
    let mut last = None;
    for (at, (elapsed, site)) in points.iter().enumerate() {
        if last != Some(site.length) || at + 1 == points.len() {
            let _ = writeln!(
                out,
                "{:>10.3} ms  {:>8} transactions  {:>6} aborts  length {}",
                elapsed.as_secs_f64() * 1e3,
                site.transactions,
                site.total_aborts(),
                site.length
            );
            last = Some(site.length);
        }
    }
    out
}

/// A `--trace` sample as a CSV row (`bench` = `gil-trace`, `idle_thread` = `trace`,
/// `seconds` since the start; the counters are the site's).
pub(crate) fn trace_record(
    workload: Workload,
    backend: &str,
    threads: usize,
    (elapsed, site): &(Duration, SiteStats),
) -> Fields {
    let mut fields = fields![
        "gil-trace",
        workload.name(),
        backend,
        "dynamic",
        "dynamic",
        threads,
        "trace",
        site.steps,
        format!("{:.6}", elapsed.as_secs_f64()),
        "",
        "",
    ];
    fields.extend(site_fields(site, site.steps));
    fields.extend(fields![site.length, ""]);
    fields
}

/// A site's counters as the columns from `transactions` to the fallbacks by cause.
fn site_fields(site: &SiteStats, committed_steps: u64) -> Fields {
    let mut fields = fields![site.transactions, site.speculative_commits, committed_steps];
    fields.extend(
        AbortClass::ALL
            .iter()
            .map(|&class| site.aborts_of(class).to_string()),
    );
    fields.extend(
        FallbackCause::ALL
            .iter()
            .map(|&cause| site.fallbacks_for(cause).to_string()),
    );
    fields
}

pub(crate) fn csv_header() -> String {
    let mut header = String::from(
        "bench,workload,backend,contender,length,threads,idle_thread,steps,seconds,steps_per_sec,\
         vs_lock,transactions,speculative_commits,committed_steps",
    );
    for class in AbortClass::ALL {
        let _ = write!(header, ",aborts_{}", class.name());
    }
    for cause in FallbackCause::ALL {
        let _ = write!(header, ",fallbacks_{}", cause.name());
    }
    header.push_str(",dynamic_length,cpu_seconds");
    header
}

pub(crate) fn csv_record(row: &Row, backend: &str, rows: &[Row]) -> Fields {
    let sample = &row.sample;
    let length = match row.contender {
        Contender::NoLock => String::new(),
        Contender::Lock => "256".into(),
        Contender::Fixed(length) => length.to_string(),
        Contender::Dynamic => "dynamic".into(),
    };
    let vs_lock = find(rows, Contender::Lock, row.threads)
        .filter(|lock| !row.idle && lock.workload == row.workload)
        .map(|lock| sample.steps_per_sec() / lock.sample.steps_per_sec());
    let mut fields = fields![
        "gil",
        row.workload.name(),
        backend,
        row.contender.label(),
        length,
        row.threads,
        u8::from(row.idle),
        sample.run.ops * CHUNK,
        format!("{:.6}", sample.run.elapsed.as_secs_f64()),
        format!("{:.1}", sample.steps_per_sec()),
        optional(vs_lock, 4),
    ];
    let total = sample.total().unwrap_or_default();
    fields.extend(site_fields(&total, total.steps));
    let dynamic = sample
        .stats
        .as_ref()
        .filter(|_| row.contender == Contender::Dynamic)
        .and_then(|stats| stats.by_site.get(&SITE))
        .map_or(String::new(), |site| site.length.to_string());
    let cpu = optional(sample.cpu.map(|cpu| cpu.as_secs_f64()), 3);
    fields.extend([dynamic, cpu]);
    fields
}
