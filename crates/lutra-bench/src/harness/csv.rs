//! The CSV files of the benchmarks, written and read through the `csv` crate: a
//! header naming the columns, then one record per run. The crate quotes a field
//! that holds a comma, a quote or a line break, and reads it back whole.
//!
//! - [`Csv`] writes a file: its header, then records (each its [`Fields`], which
//!   [`fields!`] builds).
//! - [`Table`] reads a file back (the suite's report reads every binary's file).
//! - [`counters_header`] and [`counters_fields`]: the engine's counters take the
//!   same columns in every benchmark's file.
//! - [`optional`], [`or_empty`]: the text of a figure that may be missing (an empty
//!   field).
//!
//! # Invariants
//! - Every record a [`Csv`] writes has as many fields as its header (the csv crate
//!   refuses a record of another length).
//! - A field read by [`Table`] is the text written, byte for byte.

use lutra_stm::{AbortReason, Counters};
use std::fmt::Display;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// One record being written: its fields, in column order.
pub type Fields = Vec<String>;

/// The [`Fields`] given, each anything [`Display`]: `fields!["bank",
/// threads, format!("{seconds:.6}")]`.
#[macro_export]
macro_rules! fields {
    ($($field:expr),* $(,)?) => {
        vec![$(::std::string::ToString::to_string(&$field)),*]
    };
}

/// `target/bench/<name>.csv`, relative to the current directory.
pub fn default_csv_path(name: &str) -> PathBuf {
    Path::new("target")
        .join("bench")
        .join(format!("{name}.csv"))
}

/// A CSV file being written: its header, then records, flushed after each batch.
#[derive(Debug)]
pub struct Csv {
    out: ::csv::Writer<File>,
    path: PathBuf,
}

impl Csv {
    /// Creates (or truncates) `path`, with its directories, and writes `header`: the
    /// column names, comma-separated (a column name never holds a comma).
    ///
    /// # Errors
    /// Any I/O error.
    pub fn with_header(path: &Path, header: &str) -> io::Result<Self> {
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut out = ::csv::WriterBuilder::new().from_writer(File::create(path)?);
        out.write_record(header.split(','))?;
        out.flush()?;
        Ok(Self {
            out,
            path: path.to_path_buf(),
        })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `records` and flushes.
    ///
    /// # Errors
    /// Any I/O error, or a record whose length is not the header's.
    pub fn write_records(&mut self, records: impl IntoIterator<Item = Fields>) -> io::Result<()> {
        for record in records {
            self.out.write_record(&record)?;
        }
        self.out.flush()
    }
}

/// A CSV file in memory: its column names and its records.
#[derive(Clone, Debug, Default)]
pub struct Table {
    columns: Vec<String>,
    records: Vec<Fields>,
}

/// One record of a [`Table`], read by column name.
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    table: &'a Table,
    fields: &'a [String],
}

impl Table {
    /// Reads `path`.
    ///
    /// # Errors
    /// The file cannot be read, is not CSV, or is empty (no header).
    pub fn read(path: &Path) -> io::Result<Self> {
        let text = std::fs::read_to_string(path)?;
        Self::parse(&text).map_err(|error| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {error}", path.display()),
            )
        })
    }

    /// Parses CSV text (records may have fewer or more fields than the header; a
    /// missing field reads as empty).
    ///
    /// # Errors
    /// No header line, or text the csv crate cannot read (invalid UTF-8).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut reader = ::csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(text.as_bytes());
        let mut lines = reader
            .records()
            .filter(|record| !matches!(record, Ok(r) if r.len() == 1 && r[0].trim().is_empty()));
        let columns = match lines.next() {
            Some(header) => to_fields(&header.map_err(|e| e.to_string())?),
            None => return Err("no header line".to_owned()),
        };
        let records = lines
            .map(|record| record.map(|r| to_fields(&r)).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?;
        Ok(Self { columns, records })
    }

    /// The column names.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Whether the table has column `name`.
    pub fn has(&self, name: &str) -> bool {
        self.columns.iter().any(|column| column == name)
    }

    /// The records, in file order.
    pub fn records(&self) -> impl Iterator<Item = Record<'_>> {
        self.records.iter().map(|fields| Record {
            table: self,
            fields,
        })
    }

    /// Whether there is no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

fn to_fields(record: &::csv::StringRecord) -> Fields {
    record.iter().map(str::to_owned).collect()
}

impl<'a> Record<'a> {
    /// The field of column `name` (empty when the column or the field is missing).
    pub fn get(&self, name: &str) -> &'a str {
        self.table
            .columns
            .iter()
            .position(|column| column == name)
            .and_then(|index| self.fields.get(index))
            .map_or("", String::as_str)
    }

    /// The field of column `name` as a number (`None` when empty or not a number).
    pub fn num(&self, name: &str) -> Option<f64> {
        self.get(name).trim().parse().ok()
    }
}

/// `value` with `decimals` digits after the point, or an empty field.
pub fn optional(value: Option<f64>, decimals: usize) -> String {
    value.map_or(String::new(), |value| format!("{value:.decimals$}"))
}

/// `value` as text, or an empty field.
pub fn or_empty<T: Display>(value: Option<T>) -> String {
    value.map_or(String::new(), |value| value.to_string())
}

/// The columns [`counters_fields`] fills: `starts`, `commits`, `aborts`,
/// `abort_rate`, `aborts_<reason>` for every reason, `retry_waits`, `max_retries`,
/// `wasted_ms`, each preceded by a comma (to follow other names in a header).
pub fn counters_header() -> String {
    let mut header = String::from(",starts,commits,aborts,abort_rate");
    for reason in AbortReason::ALL {
        header.push_str(",aborts_");
        header.push_str(reason.name());
    }
    header.push_str(",retry_waits,max_retries,wasted_ms");
    header
}

/// The engine's counters as the fields of [`counters_header`] (all empty without
/// counters).
pub fn counters_fields(stats: Option<&Counters>) -> Fields {
    let Some(stats) = stats else {
        return vec![String::new(); 4 + AbortReason::COUNT + 3];
    };
    let mut fields = fields![
        stats.starts,
        stats.commits,
        stats.total_aborts(),
        format!("{:.6}", stats.abort_rate()),
    ];
    fields.extend(
        AbortReason::ALL
            .iter()
            .map(|&reason| stats.aborts_for(reason).to_string()),
    );
    fields.extend(fields![
        stats.retry_waits,
        stats.max_retries,
        format!("{:.3}", stats.wasted.as_secs_f64() * 1e3),
    ]);
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_by_column_with_quotes_and_empty_fields() {
        let table = Table::parse("a,b,c\n1,\"x, y\",\n2,,3.5\n").unwrap();
        let records: Vec<Record<'_>> = table.records().collect();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].get("b"), "x, y");
        assert_eq!(records[0].num("c"), None);
        assert_eq!(records[1].num("c"), Some(3.5));
        assert_eq!(records[1].get("missing"), "");
    }

    #[test]
    fn counters_fill_as_many_fields_as_their_header_names() {
        let names = counters_header().split(',').count() - 1;
        assert_eq!(counters_fields(None).len(), names);
        assert_eq!(counters_fields(Some(&Counters::default())).len(), names);
    }

    #[test]
    fn a_text_without_a_header_is_an_error() {
        assert!(Table::parse("").is_err());
        assert!(Table::parse("\n\n").is_err());
    }
}
