//! Figures a script measures itself (a latency's percentile, a throughput), printed
//! as `figure NAME VALUE` lines (read by `child.rs`), and the aims of the `prompt` and `blocking`
//! experiments that judge them.
//!
//! | experiment | aim |
//! |------------|-----|
//! | `prompt` | `lutra.sleep(0.05)` beside a CPU-bound process on every worker: 99th percentile ≤ 0.05 s + 3 slices (5 ms each by default); the module's host ↔ process round trip beside them: 99th percentile ≤ 20 ms |
//! | `blocking` | 8 processes × `os.execute("sleep 0.5")` on 2 workers ≤ 0.6 s; CPU-bound work beside 64 processes blocked on pipes ≥ 0.95× its rate without them (the median, over the rounds, of the two runs' ratio in each round; the best runs' ratio is printed beside it); the run without them starts no thread beyond the workers and the ticker |

use crate::child::Measured;
use crate::plan::{
    BLOCKING_EXECUTE, BLOCKING_PIPE, PIPE_ALONE, PIPE_BLOCKED, PROMPT_HOST, PROMPT_SLEEP,
};
use crate::report::Row;
use std::fmt::Write as _;

/// The time slice the aims assume (`lutra`'s default `--preempt`).
const SLICE: f64 = 0.005;

/// A row's best run's figure `name`, if it printed one (and succeeded).
pub(crate) fn figure(row: &Row, name: &str) -> Option<f64> {
    run_figure(&row.measured, name)
}

/// A run's figure `name`, if it printed one (and succeeded).
fn run_figure(run: &Measured, name: &str) -> Option<f64> {
    if !run.ok {
        return None;
    }
    run.figures
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, value)| *value)
}

/// The median of `with`'s figure `name` ÷ `without`'s, round by round (the two runs of
/// a round are taken one right after the other, so the host's speed, which drifts by
/// up to 2x within minutes, is about the same for both); `None` without a round where
/// both succeeded.
fn median_of_pairs(with: &Row, without: &Row, name: &str) -> Option<(f64, usize)> {
    let mut ratios: Vec<f64> = with
        .rounds
        .iter()
        .zip(&without.rounds)
        .filter_map(|(a, b)| Some(run_figure(a, name)? / run_figure(b, name)?))
        .collect();
    ratios.sort_by(f64::total_cmp);
    let count = ratios.len();
    let median = match count {
        0 => return None,
        _ if count % 2 == 1 => ratios[count / 2],
        _ => (ratios[count / 2 - 1] + ratios[count / 2]) / 2.0,
    };
    Some((median, count))
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
            let Some(alone) = alone else { continue };
            let (Some(with), Some(without)) = (figure(row, "rate"), figure(alone, "rate")) else {
                continue;
            };
            let best = with / without;
            let (ratio, how) = match median_of_pairs(row, alone, "rate") {
                Some((median, pairs)) => (
                    median,
                    format!("median of {pairs} rounds' pairs {median:.2}×; best runs {best:.2}×"),
                ),
                None => (best, format!("best runs {best:.2}×")),
            };
            let _ = writeln!(
                out,
                "blocking: CPU-bound rate beside 64 blocked readers ≥ 0.95× without, {}: {} \
                 ({how})",
                row.spec.variant(),
                verdict(ratio >= 0.95)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::median_of_pairs;
    use crate::child::Measured;
    use crate::plan::{Runner, Spec};
    use crate::report::Row;
    use std::path::PathBuf;

    /// A row whose rounds printed these rates (`None`: a failed run).
    fn row(rates: &[Option<f64>]) -> Row {
        let run = |rate: &Option<f64>| Measured {
            ok: rate.is_some(),
            figures: rate.iter().map(|rate| ("rate".to_owned(), *rate)).collect(),
            ..Measured::default()
        };
        Row {
            spec: Spec {
                exp: "blocking",
                group: "G".into(),
                mode: "",
                runner: Runner::Lutra {
                    workers: 2,
                    sync: None,
                },
                program: PathBuf::from("p"),
                argv: Vec::new(),
                expect: "ok",
                env: Vec::new(),
            },
            measured: Measured::default(),
            rounds: rates.iter().map(run).collect(),
        }
    }

    #[test]
    fn the_median_pairs_the_runs_of_one_round_and_skips_failed_ones() {
        let alone = row(&[Some(100.0), Some(200.0), Some(100.0), Some(100.0)]);
        let with = row(&[Some(90.0), Some(190.0), None, Some(100.0)]);
        // Pairs 0.90, 0.95 and 1.00 (the third round failed): the middle one.
        let (median, pairs) = median_of_pairs(&with, &alone, "rate").unwrap();
        assert_eq!(pairs, 3);
        assert!((median - 0.95).abs() < 1e-12, "{median}");
        let even = row(&[Some(90.0), Some(190.0)]);
        let (median, pairs) = median_of_pairs(&even, &alone, "rate").unwrap();
        assert_eq!(pairs, 2);
        assert!((median - 0.925).abs() < 1e-12, "{median}");
        assert!(median_of_pairs(&row(&[None]), &alone, "rate").is_none());
    }
}
