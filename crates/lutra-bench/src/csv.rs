//! The CSV file of a sweep: a header, then one line per run, written workload by
//! workload (derived columns as defined in `report.rs`). The engine's counters take
//! the same columns in every benchmark's file ([`counters_header`],
//! [`counters_fields`]).

use crate::report::{Group, Row};
use lutra_stm::{AbortReason, Counters};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// `target/bench/<name>.csv`, relative to the current directory.
pub fn default_csv_path(name: &str) -> PathBuf {
    Path::new("target")
        .join("bench")
        .join(format!("{name}.csv"))
}

/// A CSV file of rows, one per run, written group by group.
#[derive(Debug)]
pub struct Csv {
    out: BufWriter<File>,
    path: PathBuf,
}

impl Csv {
    /// Creates (or truncates) `path`, with its directories, and writes the header of
    /// the contender sweeps (`intset`, `bank`).
    ///
    /// # Errors
    /// Any I/O error.
    pub fn create(path: &Path) -> io::Result<Self> {
        let header = format!(
            "bench,structure,size,update_percent,threads,impl,design,manager,ops,seconds,\
             ops_per_sec{},final_total,vs_seq,scaling,fraction_of_ceiling",
            counters_header()
        );
        Self::with_header(path, &header)
    }

    /// Creates (or truncates) `path`, with its directories, and writes `header` (the
    /// column names, comma-separated).
    ///
    /// # Errors
    /// Any I/O error.
    pub fn with_header(path: &Path, header: &str) -> io::Result<Self> {
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut out = BufWriter::new(File::create(path)?);
        writeln!(out, "{header}")?;
        Ok(Self {
            out,
            path: path.to_path_buf(),
        })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends every row of `group` and flushes.
    ///
    /// # Errors
    /// Any I/O error.
    pub fn write_group(&mut self, group: &Group) -> io::Result<()> {
        self.write_lines(group.rows.iter().map(|row| csv_line(group, row)))
    }

    /// Appends `lines` (each without its line break) and flushes.
    ///
    /// # Errors
    /// Any I/O error.
    pub fn write_lines(&mut self, lines: impl IntoIterator<Item = String>) -> io::Result<()> {
        for line in lines {
            writeln!(self.out, "{line}")?;
        }
        self.out.flush()
    }
}

/// The columns [`counters_fields`] fills, each preceded by a comma: `starts`,
/// `commits`, `aborts`, `abort_rate`, `aborts_<reason>` for every reason,
/// `retry_waits`, `max_retries`, `wasted_ms`.
pub fn counters_header() -> String {
    let mut header = String::from(",starts,commits,aborts,abort_rate");
    for reason in AbortReason::ALL {
        let _ = write!(header, ",aborts_{}", reason.name());
    }
    header.push_str(",retry_waits,max_retries,wasted_ms");
    header
}

/// The engine's counters as the fields of [`counters_header`], each preceded by a
/// comma (empty fields without counters).
pub fn counters_fields(stats: Option<&Counters>) -> String {
    let Some(stats) = stats else {
        return ",".repeat(4 + AbortReason::COUNT + 3);
    };
    let mut fields = format!(
        ",{},{},{},{:.6}",
        stats.starts,
        stats.commits,
        stats.total_aborts(),
        stats.abort_rate()
    );
    for reason in AbortReason::ALL {
        let _ = write!(fields, ",{}", stats.aborts_for(reason));
    }
    let _ = write!(
        fields,
        ",{},{},{:.3}",
        stats.retry_waits,
        stats.max_retries,
        stats.wasted.as_secs_f64() * 1e3
    );
    fields
}

fn csv_line(group: &Group, row: &Row) -> String {
    let run = row.sample.run;
    let mut line = format!(
        "{},{},{},{},{},{},{},{},{},{:.6},{:.1}",
        group.bench,
        group.structure,
        group.size,
        group.update_percent,
        row.threads,
        row.contender.kind(),
        row.contender.design_name(),
        row.contender.manager_name(),
        run.ops,
        run.elapsed.as_secs_f64(),
        row.throughput(),
    );
    line.push_str(&counters_fields(row.sample.stats.as_ref()));
    let optional = |value: Option<f64>| value.map_or(String::new(), |value| format!("{value:.4}"));
    let _ = write!(
        line,
        ",{},{},{},{}",
        row.sample
            .final_total
            .map_or(String::new(), |total| total.to_string()),
        optional(group.vs_sequential(row)),
        optional(group.scaling(row)),
        optional(group.fraction_of_ceiling(row)),
    );
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contender::Contender;
    use crate::measure::{Run, Sample};
    use std::time::Duration;

    #[test]
    fn lines_have_as_many_fields_as_the_header() {
        let row = Row {
            contender: Contender::Mutex,
            threads: 2,
            sample: Sample {
                run: Run {
                    ops: 10,
                    elapsed: Duration::from_secs(1),
                },
                ..Sample::default()
            },
        };
        let group = Group {
            bench: "bank",
            structure: "bank".into(),
            size: 8,
            update_percent: 95,
            title: "bank".into(),
            rows: vec![row.clone()],
        };
        let path = std::env::temp_dir().join(format!("lutra-bench-csv-{}.csv", std::process::id()));
        let mut csv = Csv::create(&path).unwrap();
        csv.write_group(&group).unwrap();
        drop(csv);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0].split(',').count(),
            lines[1].split(',').count(),
            "{text}"
        );
        assert!(
            lines[1].starts_with("bank,bank,8,95,2,mutex,,,10,"),
            "{text}"
        );
    }
}
