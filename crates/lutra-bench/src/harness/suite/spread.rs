//! Run-to-run spread: the values one point took over the rounds of a run, summed up
//! as minimum, median and maximum (what every chart draws: the median as the point or
//! bar, the minimum and maximum as its error bar).

use std::collections::BTreeMap;

/// Minimum, median and maximum of a point's rounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// The smallest value.
    pub min: f64,
    /// The median (the mean of the middle two for an even count).
    pub median: f64,
    /// The largest value.
    pub max: f64,
    /// How many rounds gave a value.
    pub rounds: usize,
}

impl Spread {
    /// The spread of `values` (NaNs left out); `None` when no value is left.
    pub fn of(values: &[f64]) -> Option<Self> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Some(Self {
            min: sorted[0],
            median,
            max: sorted[n - 1],
            rounds: n,
        })
    }

    /// `median (min–max)`, each formatted by `format` (the median alone for one round);
    /// a value that rounds to zero never shows a minus sign ([`unsigned_zero`]).
    pub fn describe(&self, format: impl Fn(f64) -> String) -> String {
        let format = |value: f64| unsigned_zero(&format(value));
        if self.rounds < 2 {
            format(self.median)
        } else {
            format!(
                "{} ({}–{})",
                format(self.median),
                format(self.min),
                format(self.max)
            )
        }
    }
}

/// `text` with the minus sign of every number that reads as zero removed: a tiny
/// negative value formatted with few decimals (`-0.0`, `-0.00×`) is printed as the
/// zero it rounds to. Minus signs of other numbers, and hyphens inside words, stay.
pub fn unsigned_zero(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        if c == '-'
            && !chars
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric())
        {
            let number: Vec<char> = chars[i + 1..]
                .iter()
                .copied()
                .take_while(|d| d.is_ascii_digit() || *d == '.')
                .collect();
            if number.iter().any(char::is_ascii_digit)
                && number.iter().all(|&d| d == '0' || d == '.')
            {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// Values gathered per (series, x) over the rounds of a run, in first-seen order of
/// the series.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    order: Vec<String>,
    values: BTreeMap<String, BTreeMap<OrderedX, Vec<f64>>>,
}

/// An x coordinate usable as a map key (compared by its bits' total order).
#[derive(Clone, Copy, Debug, PartialEq)]
struct OrderedX(f64);

impl Eq for OrderedX {}

impl PartialOrd for OrderedX {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrderedX {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Samples {
    /// Records one round's `value` of series `series` at `x`.
    pub fn push(&mut self, series: &str, x: f64, value: f64) {
        if !self.values.contains_key(series) {
            self.order.push(series.to_owned());
        }
        self.values
            .entry(series.to_owned())
            .or_default()
            .entry(OrderedX(x))
            .or_default()
            .push(value);
    }

    /// Each series (first-seen order) with its points' spreads, by increasing x.
    pub fn spreads(&self) -> Vec<(String, Vec<(f64, Spread)>)> {
        self.order
            .iter()
            .map(|name| {
                let points = self.values[name]
                    .iter()
                    .filter_map(|(x, values)| Spread::of(values).map(|spread| (x.0, spread)))
                    .collect();
                (name.clone(), points)
            })
            .collect()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_that_rounds_to_zero_has_no_sign() {
        let spread = Spread::of(&[-0.001, -0.002, 0.5]).unwrap();
        assert_eq!(spread.describe(|v| format!("{v:.1}")), "0.0 (0.0–0.5)");
        assert_eq!(unsigned_zero("-0.00×"), "0.00×");
        assert_eq!(unsigned_zero("-0"), "0");
        assert_eq!(unsigned_zero("-1.5 (-0.0–-2.0)"), "-1.5 (0.0–-2.0)");
        assert_eq!(unsigned_zero("lutra -w2"), "lutra -w2");
        assert_eq!(unsigned_zero("wb-0"), "wb-0");
        assert_eq!(unsigned_zero("-0.01"), "-0.01");
    }

    #[test]
    fn spread_of_odd_and_even_counts() {
        let odd = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(
            (odd.min, odd.median, odd.max, odd.rounds),
            (1.0, 2.0, 3.0, 3)
        );
        let even = Spread::of(&[4.0, 1.0, 2.0, f64::NAN, 3.0]).unwrap();
        assert_eq!((even.min, even.median, even.max), (1.0, 2.5, 4.0));
        assert!(Spread::of(&[f64::NAN]).is_none());
    }

    #[test]
    fn samples_keep_series_order_and_sort_x() {
        let mut samples = Samples::default();
        samples.push("b", 2.0, 5.0);
        samples.push("a", 1.0, 1.0);
        samples.push("b", 1.0, 7.0);
        samples.push("b", 1.0, 9.0);
        let spreads = samples.spreads();
        assert_eq!(spreads[0].0, "b");
        assert_eq!(spreads[0].1[0].0, 1.0);
        assert_eq!(spreads[0].1[0].1.median, 8.0);
        assert_eq!(spreads[1].0, "a");
    }
}
