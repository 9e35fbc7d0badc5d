//! Figures a script measures itself (a latency's percentile, a throughput), printed
//! as `figure NAME VALUE` lines (read by `child.rs`), and the aims of the `prompt` and `blocking`
//! experiments that judge them.
//!
//! | experiment | aim |
//! |------------|-----|
//! | `prompt` | `lutra.sleep(0.05)` beside a CPU-bound process on every worker: 99th percentile ≤ 0.05 s + 3 slices (5 ms each by default); the module's host ↔ process round trip beside them: 99th percentile ≤ 20 ms |
//! | `blocking` | 8 processes × `os.execute("sleep 0.5")` on 2 workers ≤ 0.6 s; CPU-bound work beside 64 processes blocked on pipes ≥ 0.95× its rate without them; the run without them starts no thread beyond the workers and the ticker |

use crate::plan::{
    BLOCKING_EXECUTE, BLOCKING_PIPE, PIPE_ALONE, PIPE_BLOCKED, PROMPT_HOST, PROMPT_SLEEP,
};
use crate::report::Row;
use std::fmt::Write as _;

/// The time slice the aims assume (`lutra`'s default `--preempt`).
const SLICE: f64 = 0.005;

/// A run's figure `name`, if it printed one (and succeeded).
pub(crate) fn figure(row: &Row, name: &str) -> Option<f64> {
    if !row.measured.ok {
        return None;
    }
    row.measured
        .figures
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, value)| *value)
}

/// The figures of a run, for its table row.
pub(crate) fn cell(row: &Row) -> String {
    row.measured
        .figures
        .iter()
        .map(|(name, value)| format!("  {name} {value}"))
        .collect()
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

/// The `prompt` and `blocking` aims, one line per run judged.
pub(crate) fn aims(out: &mut String, rows: &[Row]) {
    let sleep_limit = 0.05 + 3.0 * SLICE;
    for row in rows.iter().filter(|row| row.spec.exp == "prompt") {
        let Some(p99) = figure(row, "p99") else {
            continue;
        };
        let limit = if row.spec.group == PROMPT_HOST {
            0.020
        } else if row.spec.group == PROMPT_SLEEP {
            sleep_limit
        } else {
            continue;
        };
        let _ = writeln!(
            out,
            "prompt: {} {}: 99th percentile ≤ {limit:.3} s: {} ({p99:.4} s)",
            row.spec.group,
            row.spec.variant(),
            verdict(p99 <= limit)
        );
    }
    for row in rows
        .iter()
        .filter(|row| row.spec.exp == "blocking" && row.measured.ok)
    {
        if row.spec.group == BLOCKING_EXECUTE {
            let wall = row.measured.wall;
            let _ = writeln!(
                out,
                "blocking: {} {}: ≤ 0.6 s: {} ({wall:.3} s)",
                row.spec.group,
                row.spec.variant(),
                verdict(wall <= 0.6)
            );
        }
        if row.spec.group == BLOCKING_PIPE
            && row.spec.mode == PIPE_ALONE
            && let Some(spare) = figure(row, "spare_threads")
        {
            let _ = writeln!(
                out,
                "blocking: a CPU-bound run starts no thread beyond the workers and the ticker, {}: {} \
                 ({spare:.0} more)",
                row.spec.variant(),
                verdict(spare <= 0.0)
            );
        }
        if row.spec.group == BLOCKING_PIPE && row.spec.mode == PIPE_BLOCKED {
            let alone = rows.iter().find(|other| {
                other.spec.exp == "blocking"
                    && other.spec.mode == PIPE_ALONE
                    && other.spec.runner == row.spec.runner
            });
            let (Some(with), Some(without)) =
                (figure(row, "rate"), alone.and_then(|a| figure(a, "rate")))
            else {
                continue;
            };
            let ratio = with / without;
            let _ = writeln!(
                out,
                "blocking: CPU-bound rate beside 64 blocked readers ≥ 0.95× without, {}: {} \
                 ({ratio:.2}×)",
                row.spec.variant(),
                verdict(ratio >= 0.95)
            );
        }
    }
}
