//! Result rows, their CSV records and their on-screen table (printed by
//! [`crate::harness::table`]).
//!
//! Derived figures, per group (one workload):
//!
//! | figure | definition |
//! |--------|------------|
//! | `vs_seq` | throughput ÷ the sequential run's (at 1 thread: the single-thread overhead) |
//! | `scaling` | throughput ÷ the same contender's 1-thread throughput |
//! | `fraction_of_ceiling` | at 2 threads: throughput ÷ the ceiling's (two sequential copies side by side), i.e. the 2-thread speedup over sequential as a fraction of the speedup this machine can give |
//! | `abort_rate` | aborted attempts ÷ started attempts (STM only) |

use crate::harness::contender::{CEILING_THREADS, Contender};
use crate::harness::csv::{Fields, counters_fields, counters_header, optional, or_empty};
use crate::harness::measure::Sample;
use crate::harness::table::{GridLine, distinct, percent, ratio, si, thread_headers, write_grid};
use std::fmt::Write as _;

/// One measured run.
#[derive(Clone, Debug)]
pub struct Row {
    /// The contender.
    pub contender: Contender,
    /// Threads it ran on.
    pub threads: usize,
    /// What was measured.
    pub sample: Sample,
}

impl Row {
    /// Operations per second.
    pub fn throughput(&self) -> f64 {
        self.sample.run.throughput()
    }

    /// Aborted attempts per started attempt, for STM rows.
    pub fn abort_rate(&self) -> Option<f64> {
        self.sample.stats.map(|stats| stats.abort_rate())
    }
}

/// The runs of one workload, with what identifies it in the CSV file.
#[derive(Clone, Debug)]
pub struct Group {
    /// The benchmark (`intset`, `bank`).
    pub bench: &'static str,
    /// The structure (`list`, …) or `bank`.
    pub structure: String,
    /// Initial keys, or accounts.
    pub size: usize,
    /// Percentage of updating operations.
    pub update_percent: u32,
    /// A title for the screen.
    pub title: String,
    /// The runs, in the order measured.
    pub rows: Vec<Row>,
}

/// The CSV header of the contender sweeps (`intset`, `bank`).
pub fn csv_header() -> String {
    format!(
        "bench,structure,size,update_percent,threads,impl,design,manager,ops,seconds,\
         ops_per_sec{},final_total,vs_seq,scaling,fraction_of_ceiling",
        counters_header()
    )
}

impl Group {
    /// One CSV record per row, in order (fields as [`csv_header`]).
    pub fn csv_records(&self) -> Vec<Fields> {
        self.rows.iter().map(|row| self.csv_record(row)).collect()
    }

    fn csv_record(&self, row: &Row) -> Fields {
        let run = row.sample.run;
        let mut fields = crate::fields![
            self.bench,
            self.structure,
            self.size,
            self.update_percent,
            row.threads,
            row.contender.kind(),
            row.contender.design_name(),
            row.contender.manager_name(),
            run.ops,
            format!("{:.6}", run.elapsed.as_secs_f64()),
            format!("{:.1}", row.throughput()),
        ];
        fields.extend(counters_fields(row.sample.stats.as_ref()));
        fields.extend([
            or_empty(row.sample.final_total),
            optional(self.vs_sequential(row), 4),
            optional(self.scaling(row), 4),
            optional(self.fraction_of_ceiling(row), 4),
        ]);
        fields
    }

    fn throughput_of(&self, contender: Contender, threads: usize) -> Option<f64> {
        self.rows
            .iter()
            .find(|row| row.contender == contender && row.threads == threads)
            .map(Row::throughput)
    }

    /// The sequential run's throughput.
    pub fn sequential(&self) -> Option<f64> {
        self.throughput_of(Contender::Sequential, 1)
    }

    /// The ceiling run's throughput.
    pub fn ceiling(&self) -> Option<f64> {
        self.throughput_of(Contender::Ceiling, CEILING_THREADS)
    }

    /// `row`'s throughput ÷ the sequential run's.
    pub fn vs_sequential(&self, row: &Row) -> Option<f64> {
        Some(row.throughput() / self.sequential()?)
    }

    /// `row`'s throughput ÷ the same contender's at 1 thread.
    pub fn scaling(&self, row: &Row) -> Option<f64> {
        Some(row.throughput() / self.throughput_of(row.contender, 1)?)
    }

    /// At [`CEILING_THREADS`]: `row`'s throughput ÷ the ceiling's.
    pub fn fraction_of_ceiling(&self, row: &Row) -> Option<f64> {
        if row.threads != CEILING_THREADS || row.contender == Contender::Ceiling {
            return None;
        }
        Some(row.throughput() / self.ceiling()?)
    }

    /// The group as a text table: throughput per contender and thread count (the
    /// counts given, and any a row ran with), the ratios, then the STM abort rates.
    pub fn table(&self, threads: &[usize]) -> String {
        let mut columns: Vec<usize> = threads.to_vec();
        columns.extend(self.rows.iter().map(|row| row.threads));
        columns.sort_unstable();
        columns.dedup();
        let threads = &columns[..];
        let mut out = String::new();
        let _ = write!(out, "== {}", self.title);
        if let (Some(seq), Some(ceiling)) = (self.sequential(), self.ceiling()) {
            let _ = write!(
                out,
                " — seq {} ops/s; ceiling ({CEILING_THREADS} copies) {} = {:.2}× seq",
                si(seq),
                si(ceiling),
                ceiling / seq
            );
        }
        out.push('\n');
        self.throughput_block(&mut out, threads);
        self.abort_block(&mut out, threads);
        out
    }

    /// The distinct contenders, in order of first appearance.
    fn contenders(&self) -> Vec<Contender> {
        distinct(self.rows.iter().map(|row| row.contender))
    }

    fn row(&self, contender: Contender, threads: usize) -> Option<&Row> {
        self.rows
            .iter()
            .find(|row| row.contender == contender && row.threads == threads)
    }

    fn throughput_block(&self, out: &mut String, threads: &[usize]) {
        let mut headers = thread_headers(threads);
        headers.extend(["1t/seq".to_string(), "2t/ceil".to_string()]);
        let lines: Vec<GridLine> = self
            .contenders()
            .into_iter()
            .map(|contender| {
                let mut cells: Vec<String> = threads
                    .iter()
                    .map(|&count| {
                        self.row(contender, count)
                            .map_or(String::new(), |row| si(row.throughput()))
                    })
                    .collect();
                let one = self
                    .row(contender, 1)
                    .filter(|_| contender != Contender::Sequential)
                    .and_then(|row| self.vs_sequential(row));
                let two = self
                    .row(contender, CEILING_THREADS)
                    .and_then(|row| self.fraction_of_ceiling(row));
                cells.extend([ratio(one), ratio(two)]);
                (contender.label(), cells)
            })
            .collect();
        write_grid(out, "ops/s", &headers, &lines);
    }

    fn abort_block(&self, out: &mut String, threads: &[usize]) {
        let lines: Vec<GridLine> = self
            .contenders()
            .into_iter()
            .filter(|contender| matches!(contender, Contender::Stm { .. }))
            .map(|contender| {
                let cells = threads
                    .iter()
                    .map(|&count| {
                        self.row(contender, count)
                            .and_then(Row::abort_rate)
                            .map_or(String::new(), percent)
                    })
                    .collect();
                (contender.label(), cells)
            })
            .collect();
        if !lines.is_empty() {
            write_grid(out, "abort rate %", &thread_headers(threads), &lines);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::measure::Run;
    use std::time::Duration;

    fn row(contender: Contender, threads: usize, ops: u64) -> Row {
        Row {
            contender,
            threads,
            sample: Sample {
                run: Run {
                    ops,
                    elapsed: Duration::from_secs(1),
                },
                ..Sample::default()
            },
        }
    }

    #[test]
    fn ratios_and_table() {
        let group = Group {
            bench: "intset",
            structure: "list".into(),
            size: 256,
            update_percent: 20,
            title: "list".into(),
            rows: vec![
                row(Contender::Sequential, 1, 1000),
                row(Contender::Ceiling, 2, 2000),
                row(Contender::Mutex, 1, 800),
                row(Contender::Mutex, 2, 500),
            ],
        };
        let mutex_two = &group.rows[3];
        assert_eq!(group.vs_sequential(mutex_two), Some(0.5));
        assert_eq!(group.scaling(mutex_two), Some(0.625));
        assert_eq!(group.fraction_of_ceiling(mutex_two), Some(0.25));
        let table = group.table(&[1, 2]);
        assert!(table.contains("2.00× seq"), "{table}");
        assert!(table.contains("0.80"), "{table}");
        assert_eq!(si(1234.0), "1.23k");
        assert_eq!(si(12_345_678.0), "12.3M");
    }
}
