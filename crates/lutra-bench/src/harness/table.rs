//! The one text-table printer of the benchmarks: every binary's on-screen table is a
//! [`TextTable`] (columns of a width and an alignment, a header line, then one line
//! per run), and [`write_grid`] is the common shape of it (a label column, then
//! numbers).
//!
//! # Invariants
//! - A cell is padded to its column's width, counted in characters, and never cut: a
//!   longer cell pushes the rest of its line right (as `format!("{:>9}")` does).
//! - A line with more cells than columns lays the extra cells out as the last
//!   column; a line with fewer cells ends after its last cell.
//! - Every line, the header's too, ends in `\n`.
//!
//! The cell helpers [`si`], [`ratio`], [`percent`] and [`thread_headers`] give the
//! tables their common number formats.

/// Where a column puts its cells' text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text first, then padding.
    Left,
    /// Padding first, then text.
    Right,
}

#[derive(Clone, Debug)]
struct Column {
    header: String,
    width: usize,
    align: Align,
    gap: &'static str,
}

#[derive(Clone, Debug)]
struct Line {
    cells: Vec<String>,
    tail: String,
}

/// A text table: columns, then lines of cells (see the module's invariants).
#[derive(Clone, Debug)]
pub struct TextTable {
    columns: Vec<Column>,
    separator: &'static str,
    next_gap: Option<&'static str>,
    lines: Vec<Line>,
}

impl TextTable {
    /// An empty table whose columns are put side by side with `separator` between
    /// them (`""`: the widths alone keep them apart).
    pub fn new(separator: &'static str) -> Self {
        Self {
            columns: Vec::new(),
            separator,
            next_gap: None,
            lines: Vec::new(),
        }
    }

    /// Adds a column of `width` characters, cells and header aligned by `align`.
    #[must_use]
    pub fn column(mut self, header: impl Into<String>, width: usize, align: Align) -> Self {
        let gap = match (self.columns.is_empty(), self.next_gap.take()) {
            (true, _) => "",
            (false, Some(gap)) => gap,
            (false, None) => self.separator,
        };
        self.columns.push(Column {
            header: header.into(),
            width,
            align,
            gap,
        });
        self
    }

    /// Adds a left-aligned column ([`Self::column`]).
    #[must_use]
    pub fn left(self, header: impl Into<String>, width: usize) -> Self {
        self.column(header, width, Align::Left)
    }

    /// Adds a right-aligned column ([`Self::column`]).
    #[must_use]
    pub fn right(self, header: impl Into<String>, width: usize) -> Self {
        self.column(header, width, Align::Right)
    }

    /// Puts `gap` instead of the separator before the next column only.
    #[must_use]
    pub fn gap(mut self, gap: &'static str) -> Self {
        self.next_gap = Some(gap);
        self
    }

    /// Adds a line of `cells`, in column order.
    pub fn push(&mut self, cells: Vec<String>) {
        self.push_with_tail(cells, String::new());
    }

    /// Adds a line of `cells`, followed by `tail` as it is (a note after the last
    /// column).
    pub fn push_with_tail(&mut self, cells: Vec<String>, tail: String) {
        self.lines.push(Line { cells, tail });
    }

    /// The header line alone (for a table printed a line at a time, as its runs end).
    pub fn header(&self) -> String {
        let mut out = String::new();
        let headers: Vec<&str> = self.columns.iter().map(|c| c.header.as_str()).collect();
        self.write_cells(&mut out, &headers, "");
        out
    }

    /// One line of `cells` and its `tail`, laid out as [`Self::push_with_tail`] would,
    /// without keeping it.
    pub fn line(&self, cells: &[&str], tail: &str) -> String {
        let mut out = String::new();
        self.write_cells(&mut out, cells, tail);
        out
    }

    /// Appends the header line and every line to `out`.
    pub fn write(&self, out: &mut String) {
        out.push_str(&self.header());
        for line in &self.lines {
            let cells: Vec<&str> = line.cells.iter().map(String::as_str).collect();
            self.write_cells(out, &cells, &line.tail);
        }
    }

    /// The header line and every line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write_cells(&self, out: &mut String, cells: &[&str], tail: &str) {
        for (index, cell) in cells.iter().enumerate() {
            let Some(column) = self.columns.get(index).or(self.columns.last()) else {
                break;
            };
            out.push_str(column.gap);
            pad(out, cell, column.width, column.align);
        }
        out.push_str(tail);
        out.push('\n');
    }
}

fn pad(out: &mut String, text: &str, width: usize, align: Align) {
    let fill = width.saturating_sub(text.chars().count());
    if align == Align::Right {
        out.extend(std::iter::repeat_n(' ', fill));
    }
    out.push_str(text);
    if align == Align::Left {
        out.extend(std::iter::repeat_n(' ', fill));
    }
}

/// One line of a [`write_grid`] block: its label and its cells, in column order
/// (an empty cell for a run that was not made).
pub type GridLine = (String, Vec<String>);

/// Writes one block of a table: a header line (`corner`, then `headers`), then each
/// line: a 22-character label, then its cells right-aligned in 9 characters.
pub fn write_grid(out: &mut String, corner: &str, headers: &[String], lines: &[GridLine]) {
    let mut table = headers
        .iter()
        .fold(TextTable::new("").left(corner, 22), |table, header| {
            table.right(header.as_str(), 9)
        });
    for (label, cells) in lines {
        let mut line = vec![label.clone()];
        line.extend(cells.iter().cloned());
        table.push(line);
    }
    table.write(out);
}

/// The distinct `items`, in order of first appearance (a table's lines, one per
/// contender or mode, from rows in the order measured).
pub fn distinct<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut seen = Vec::new();
    for item in items {
        if !seen.contains(&item) {
            seen.push(item);
        }
    }
    seen
}

/// A count: exact below `exact_below`, then with an SI suffix (`950`, `12.3k`).
pub fn count(n: u64, exact_below: u64) -> String {
    if n < exact_below {
        n.to_string()
    } else {
        si(n as f64)
    }
}

/// Thread counts as column headers.
pub fn thread_headers(threads: &[usize]) -> Vec<String> {
    threads.iter().map(usize::to_string).collect()
}

/// `12.3M`, `850k`, `42`: three significant digits with an SI suffix.
pub fn si(value: f64) -> String {
    let (scaled, suffix) = match value {
        v if v >= 1e9 => (v / 1e9, "G"),
        v if v >= 1e6 => (v / 1e6, "M"),
        v if v >= 1e3 => (v / 1e3, "k"),
        v => (v, ""),
    };
    let digits = if scaled >= 100.0 {
        0
    } else if scaled >= 10.0 {
        1
    } else {
        2
    };
    format!("{scaled:.digits$}{suffix}")
}

/// A ratio with two decimals, or an empty cell.
pub fn ratio(value: Option<f64>) -> String {
    value.map_or(String::new(), |value| format!("{value:.2}"))
}

/// A fraction as a percentage with one decimal (`0.123` → `12.3`).
pub fn percent(fraction: f64) -> String {
    format!("{:.1}", fraction * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_padded_like_format_and_never_cut() {
        let mut table = TextTable::new(" ")
            .right("sync", 5)
            .left("name", 6)
            .gap("  ")
            .right("n", 3);
        table.push(vec!["tm".into(), "a".into(), "12345".into()]);
        table.push_with_tail(vec!["locks!".into()], "  note".into());
        let expected = format!(
            "{:>5} {:<6}  {:>3}\n{:>5} {:<6}  {:>3}\n{:>5}  note\n",
            "sync", "name", "n", "tm", "a", "12345", "locks!"
        );
        assert_eq!(table.render(), expected);
    }

    #[test]
    fn a_grid_has_a_label_column_then_numbers_and_extra_cells_take_the_last_width() {
        let mut out = String::new();
        let lines = vec![(
            "mutex".to_owned(),
            vec!["1.00M".into(), String::new(), "9".into()],
        )];
        write_grid(&mut out, "ops/s", &thread_headers(&[1, 2]), &lines);
        let expected = format!(
            "{:<22}{:>9}{:>9}\n{:<22}{:>9}{:>9}{:>9}\n",
            "ops/s", "1", "2", "mutex", "1.00M", "", "9"
        );
        assert_eq!(out, expected);
    }

    #[test]
    fn width_counts_characters_not_bytes() {
        let mut table = TextTable::new("").right("×lua", 6);
        table.push(vec!["÷".into()]);
        assert_eq!(table.render(), format!("{:>6}\n{:>6}\n", "×lua", "÷"));
    }
}
