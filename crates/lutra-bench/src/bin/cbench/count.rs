//! `cbench --count`: instructions per transactional operation through the C ABI,
//! counted by callgrind, side by side with libitm and the bare loop.
//!
//! # Protocol
//! 1. Run `count-<system> <n>` under `valgrind --tool=callgrind --collect-atstart=no`
//!    for each column: Lutra instrumented (`LUTRA_STM_SOLO=0`: the path every
//!    thread takes once a second one is registered) with `LUTRA_STM_STATS=0` and
//!    `=1`, Lutra solo (one thread alone with the engine runs uninstrumented, as
//!    libitm's default method does), solo again with `stm.h`'s inline accesses
//!    (`LUTRA_INLINE`: no call per access), the same program linked with
//!    `liblutra.so` instead of `liblutra.a` (instrumented and solo), the `-fgnu-tm` build on Lutra's
//!    `libitm.so.1` (instrumented and solo), libitm with its
//!    default method and with `ITM_DEFAULT_METHOD=ml_wt` and `gl_wt`, and the
//!    sequential build (the loop alone). The program switches collection on around
//!    each measured operation and dumps one file per measurement, labelled
//!    `<op> <reps>` (`bench/c/count.c`).
//! 2. Read the dumps' `desc: Trigger: Client Request: <label>` and `totals:` lines.
//! 3. Instructions per operation = (cost at 2n − cost at n) ÷ n: setup, warm-up and
//!    every constant cost cancel. The figures include the loop's own few
//!    instructions (the sequential column shows them).

use crate::Args;
use crate::compile::Programs;
use lutra_bench::harness::csv::{Csv, optional, or_empty};
use lutra_bench::harness::table::TextTable;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// One column: a program and its environment.
struct Column {
    name: &'static str,
    system: &'static str,
    env: &'static [(&'static str, &'static str)],
    /// Runs the `-fgnu-tm` build on Lutra's `libitm.so.1`.
    on_lutra_itm: bool,
}

const COLUMNS: [Column; 12] = [
    Column {
        name: "lutra",
        system: "lutra",
        env: &[("LUTRA_STM_STATS", "0"), ("LUTRA_STM_SOLO", "0")],
        on_lutra_itm: false,
    },
    Column {
        name: "lutra+stats",
        system: "lutra",
        env: &[("LUTRA_STM_STATS", "1"), ("LUTRA_STM_SOLO", "0")],
        on_lutra_itm: false,
    },
    Column {
        name: "lutra solo",
        system: "lutra",
        env: &[("LUTRA_STM_STATS", "0"), ("LUTRA_STM_SOLO", "1")],
        on_lutra_itm: false,
    },
    Column {
        name: "lutra solo inline",
        system: "lutra-inline",
        env: &[("LUTRA_STM_STATS", "0"), ("LUTRA_STM_SOLO", "1")],
        on_lutra_itm: false,
    },
    Column {
        name: "lutra.so",
        system: "lutra-so",
        env: &[("LUTRA_STM_STATS", "0"), ("LUTRA_STM_SOLO", "0")],
        on_lutra_itm: false,
    },
    Column {
        name: "lutra.so solo",
        system: "lutra-so",
        env: &[("LUTRA_STM_STATS", "0"), ("LUTRA_STM_SOLO", "1")],
        on_lutra_itm: false,
    },
    Column {
        name: "lutra-itm",
        system: "libitm",
        env: &[("LUTRA_STM_STATS", "0"), ("LUTRA_STM_SOLO", "0")],
        on_lutra_itm: true,
    },
    Column {
        name: "lutra-itm solo",
        system: "libitm",
        env: &[("LUTRA_STM_STATS", "0"), ("LUTRA_STM_SOLO", "1")],
        on_lutra_itm: true,
    },
    Column {
        name: "libitm",
        system: "libitm",
        env: &[],
        on_lutra_itm: false,
    },
    Column {
        name: "itm ml_wt",
        system: "libitm",
        env: &[("ITM_DEFAULT_METHOD", "ml_wt")],
        on_lutra_itm: false,
    },
    Column {
        name: "itm gl_wt",
        system: "libitm",
        env: &[("ITM_DEFAULT_METHOD", "gl_wt")],
        on_lutra_itm: false,
    },
    Column {
        name: "loop (seq)",
        system: "seq",
        env: &[],
        on_lutra_itm: false,
    },
];

/// The operations, in table order, with their targets (statistics off).
const OPERATIONS: [(&str, &str, Option<f64>); 9] = [
    ("read", "read (tx of n reads)", Some(35.0)),
    ("read_after_write", "read after a write", Some(35.0)),
    ("read_call", "read, call alone", Some(35.0)),
    ("write", "write (+ commit share)", None),
    ("write_call", "write, call alone", Some(40.0)),
    ("empty", "empty transaction", Some(120.0)),
    ("tx_1read", "1-read transaction", None),
    ("tx_1write", "1-write transaction", Some(350.0)),
    ("tx_1write_after_large", "1-write tx after 2n-write", None),
];

/// Runs `column` under callgrind; returns the cost of each `(op, reps)` dump.
fn measure(
    programs: &Programs,
    column: &Column,
    reps: usize,
    dir: &Path,
) -> Result<BTreeMap<(String, usize), u64>, String> {
    let prefix = dir.join(column.name.replace([' ', '+', '(', ')'], "_"));
    let mut command = Command::new("valgrind");
    command
        .arg("--tool=callgrind")
        .arg("--collect-atstart=no")
        .arg(format!("--callgrind-out-file={}.out", prefix.display()))
        .arg(programs.count(column.system))
        .arg(reps.to_string())
        .env_remove("LUTRA_STM_DESIGN")
        .env_remove("LUTRA_STM_CM")
        .env_remove("ITM_DEFAULT_METHOD");
    for (key, value) in column.env {
        command.env(key, value);
    }
    if column.on_lutra_itm {
        command.env("LD_LIBRARY_PATH", &programs.lutra_itm);
    }
    let output = command
        .output()
        .map_err(|error| format!("valgrind: cannot start ({error}); is valgrind installed?"))?;
    if !output.status.success() {
        return Err(format!(
            "{} under callgrind failed: {}",
            column.name,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let stem = prefix
        .file_name()
        .map(|name| format!("{}.out.", name.to_string_lossy()))
        .unwrap_or_default();
    let mut costs = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(|error| error.to_string())? {
        let path = entry.map_err(|error| error.to_string())?.path();
        let is_dump = path
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with(&stem));
        if !is_dump {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|error| error.to_string())?;
        let label = text
            .lines()
            .find_map(|line| line.strip_prefix("desc: Trigger: Client Request: "));
        let total = text
            .lines()
            .find_map(|line| line.strip_prefix("totals: "))
            .and_then(|value| value.trim().parse::<u64>().ok());
        if let (Some(label), Some(total)) = (label, total)
            && let Some((op, count)) = label.rsplit_once(' ')
            && let Ok(count) = count.parse::<usize>()
        {
            costs.insert((op.to_owned(), count), total);
        }
    }
    Ok(costs)
}

/// (cost(2n) − cost(n)) ÷ n for `op`, if both were measured.
fn per_op(costs: &BTreeMap<(String, usize), u64>, op: &str, reps: usize) -> Option<f64> {
    let once = *costs.get(&(op.to_owned(), reps))?;
    let twice = *costs.get(&(op.to_owned(), 2 * reps))?;
    Some((twice as f64 - once as f64) / reps as f64)
}

/// Measures every column, prints the table and targets, writes the CSV file.
///
/// # Errors
/// valgrind missing or failing, or the CSV file.
pub(crate) fn main(args: &Args, programs: &Programs) -> Result<(), String> {
    let reps = args.reps.clamp(1, 1024);
    let dir = programs.dir.join("callgrind");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|error| format!("{}: {error}", dir.display()))?;
    let mut table: Vec<BTreeMap<(String, usize), u64>> = Vec::new();
    for column in &COLUMNS {
        eprintln!(
            "counting {} (callgrind, n = {reps} and {})…",
            column.name,
            2 * reps
        );
        table.push(measure(programs, column, reps, &dir)?);
    }
    let cell = |column: usize, op: &str| per_op(&table[column], op, reps);
    let mut text = COLUMNS.iter().fold(
        TextTable::new("").left("instructions per op", 26),
        |text, column| text.right(column.name, 19),
    );
    text = text.right("target", 8);
    for (op, label, target) in OPERATIONS.iter() {
        let mut cells = vec![(*label).to_owned()];
        cells.extend((0..COLUMNS.len()).map(|column| {
            cell(column, op).map_or("-".to_owned(), |value| {
                // Rounded first: a differential a hair below zero prints 0.0, not -0.0.
                format!("{:.1}", (value * 10.0).round() / 10.0 + 0.0)
            })
        }));
        cells.push(target.map_or(String::new(), |t| format!("≤ {t}")));
        text.push(cells);
    }
    print!("{}", text.render());
    println!(
        "(differential: (cost at {} − cost at {reps}) ÷ {reps}; each figure includes the loop \
         around the operation, the last column; libitm's default method runs one thread \
         uninstrumented, and GCC drops an empty __transaction_atomic)",
        2 * reps
    );
    // Instrumented (every thread once a second one is registered), and a thread alone
    // with the engine through stm.h's inline accesses.
    let solo_inline = COLUMNS
        .iter()
        .position(|column| column.name == "lutra solo inline")
        .unwrap_or(0);
    for (column, name) in [(0, "lutra"), (solo_inline, "solo inline")] {
        for (op, label, target) in OPERATIONS.iter() {
            if let (Some(target), Some(value)) = (target, cell(column, op)) {
                let mark = if value <= *target { "met" } else { "NOT MET" };
                println!("  target {label:<24} {name:<11} {value:>8.1} ≤ {target:<5} {mark}");
            }
        }
    }
    let path = args
        .csv
        .clone()
        .unwrap_or_else(|| lutra_bench::harness::csv::default_csv_path("cbench-count"));
    let mut csv = Csv::with_header(&path, "operation,column,instructions_per_op,target")
        .map_err(|error| format!("{}: {error}", path.display()))?;
    let lines = OPERATIONS
        .iter()
        .flat_map(|(op, _, target)| {
            let cell = &cell;
            COLUMNS.iter().enumerate().map(move |(column, spec)| {
                lutra_bench::fields![
                    op,
                    spec.name,
                    optional(cell(column, op), 1),
                    or_empty(*target),
                ]
            })
        })
        .collect::<Vec<_>>();
    csv.write_records(lines)
        .map_err(|error| format!("{}: {error}", path.display()))?;
    println!("CSV: {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_differential_cancels_constant_costs() {
        let mut costs = BTreeMap::new();
        costs.insert(("read".to_owned(), 1000), 500 + 1000 * 30);
        costs.insert(("read".to_owned(), 2000), 500 + 2000 * 30);
        assert_eq!(per_op(&costs, "read", 1000), Some(30.0));
        assert_eq!(per_op(&costs, "write", 1000), None);
    }
}
