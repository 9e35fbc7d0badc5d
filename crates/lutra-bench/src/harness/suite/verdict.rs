//! The one line that opens each section of the report: what the figures conclude,
//! computed from them ("lutra -w2 locks 1.92x faster than lua5.4 on experiment 2").
//!
//! A ratio is always "how many times better Lutra did than the reference" (a speed
//! ratio: the reference's time ÷ Lutra's, or Lutra's throughput ÷ the reference's),
//! taken between medians over the run's rounds. Within 5% either way is "on par":
//! the rounds' own spread is often that wide on a shared machine.

use super::spread::Samples;

/// How close to 1 a ratio must be to read as a tie.
const TIE: f64 = 0.05;

/// `ours` against `reference` at `ratio` (> 1: `ours` is faster), `on` naming the
/// workload: "X 1.92x faster than Y on Z", "X behind Y on Z: 0.53x its speed", or
/// "X on par with Y on Z (0.98x)".
pub fn speed(ours: &str, reference: &str, ratio: f64, on: &str) -> String {
    if ratio >= 1.0 + TIE {
        format!("{ours} {ratio:.2}x faster than {reference} {on}")
    } else if ratio <= 1.0 - TIE {
        format!("{ours} behind {reference} {on}: {ratio:.2}x its speed")
    } else {
        format!("{ours} on par with {reference} {on} ({ratio:.2}x)")
    }
}

/// The median of `series` at `x`, if it was measured.
pub fn median(samples: &Samples, series: &str, x: f64) -> Option<f64> {
    samples
        .spreads()
        .into_iter()
        .find(|(name, _)| name == series)?
        .1
        .into_iter()
        .find(|&(px, _)| px == x)
        .map(|(_, spread)| spread.median)
}

/// The largest x measured for `series`.
pub fn largest_x(samples: &Samples, series: &str) -> Option<f64> {
    samples
        .spreads()
        .into_iter()
        .find(|(name, _)| name == series)?
        .1
        .last()
        .map(|&(x, _)| x)
}

/// The series whose median at `x` is the largest, with that median.
pub fn best_at(samples: &Samples, x: f64) -> Option<(String, f64)> {
    samples
        .spreads()
        .into_iter()
        .filter_map(|(name, points)| {
            let &(_, spread) = points.iter().find(|&&(px, _)| px == x)?;
            Some((name, spread.median))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_says_who_is_ahead_and_by_how_much() {
        assert_eq!(
            speed("lutra -w2", "lua5.4", 1.918, "on experiment 2"),
            "lutra -w2 1.92x faster than lua5.4 on experiment 2"
        );
        assert_eq!(
            speed("Lutra", "GCC's libitm", 0.53, "on bank at 1 thread"),
            "Lutra behind GCC's libitm on bank at 1 thread: 0.53x its speed"
        );
        assert_eq!(
            speed("Lutra", "libitm", 1.02, "on lists"),
            "Lutra on par with libitm on lists (1.02x)"
        );
    }

    #[test]
    fn medians_are_read_per_series_and_x() {
        let mut samples = Samples::default();
        for value in [1.0, 3.0, 2.0] {
            samples.push("a", 2.0, value);
        }
        samples.push("a", 8.0, 5.0);
        samples.push("b", 8.0, 7.0);
        assert_eq!(median(&samples, "a", 2.0), Some(2.0));
        assert_eq!(median(&samples, "a", 4.0), None);
        assert_eq!(median(&samples, "c", 2.0), None);
        assert_eq!(largest_x(&samples, "a"), Some(8.0));
        assert_eq!(best_at(&samples, 8.0), Some(("b".into(), 7.0)));
    }
}
