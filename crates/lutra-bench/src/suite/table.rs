//! The CSV files the benchmark binaries write, read back: a header naming the
//! columns, then one record per line. Fields are split on commas outside double
//! quotes (luabench quotes its free-text `problem` column); a quote inside a quoted
//! field is not expected (the writers replace it).

use std::io;
use std::path::Path;

/// A CSV file in memory: its column names and its records.
#[derive(Clone, Debug, Default)]
pub struct Table {
    columns: Vec<String>,
    records: Vec<Vec<String>>,
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
    /// The file cannot be read, or it is empty (no header).
    pub fn read(path: &Path) -> io::Result<Self> {
        let text = std::fs::read_to_string(path)?;
        Self::parse(&text).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: no header line", path.display()),
            )
        })
    }

    /// Parses CSV text; `None` without a header line.
    pub fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines().filter(|line| !line.trim().is_empty());
        let columns = split(lines.next()?);
        let records = lines.map(split).collect();
        Some(Self { columns, records })
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

fn split(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    fields.push(field);
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
}
