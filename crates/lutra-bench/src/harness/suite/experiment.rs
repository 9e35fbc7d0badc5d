//! The experiments of the suite: for each seed paper, what the experiment shows, the
//! reference it is compared with in the same run, the jobs it needs, and how its
//! figures and tables are made from the jobs' CSV tables ([`Findings`]).

use super::chart::{Figure, Layout, Series};
use super::jobs::{Job, JobData, Scale};
use super::spread::Samples;
use super::{engine, seed000, seed001, seed002, seed003, seed004};
use crate::harness::csv::{Record, Table};
use std::collections::BTreeMap;

/// One experiment of the suite.
#[derive(Clone, Copy, Debug)]
pub struct Experiment {
    /// Its name on the command line and in file names (`seed000`, `engine`).
    pub id: &'static str,
    /// The heading.
    pub title: &'static str,
    /// The paper it follows.
    pub paper: &'static str,
    /// What the experiment shows.
    pub shows: &'static str,
    /// The reference each figure is compared with.
    pub reference: &'static str,
    /// The jobs it needs, in the order a round runs them.
    pub jobs: &'static [Job],
    /// Figures and tables from the jobs' data.
    pub analyze: fn(&Inputs<'_>) -> Findings,
}

/// What the analysis of an experiment reads.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    /// Every job's data (jobs that did not run are missing).
    pub data: &'a BTreeMap<Job, JobData>,
    /// The scale of the run.
    pub scale: Scale,
    /// Processors of the machine.
    pub cores: usize,
}

impl Inputs<'_> {
    /// The rounds of `job` (empty when it did not run).
    pub fn rounds(&self, job: Job) -> &[Table] {
        self.data
            .get(&job)
            .map_or(&[], |data| data.rounds.as_slice())
    }
}

/// A table of the report: a header and rows of cells.
#[derive(Clone, Debug, Default)]
pub struct Grid {
    /// What the table shows (a line above it).
    pub caption: String,
    /// Column names.
    pub header: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
}

/// What an experiment found: figures, tables and remarks.
#[derive(Clone, Debug, Default)]
pub struct Findings {
    /// Charts, in reading order.
    pub figures: Vec<Figure>,
    /// Tables of medians and ratios.
    pub grids: Vec<Grid>,
    /// Remarks (what is missing, how a number was formed).
    pub notes: Vec<String>,
    /// Verbatim output shown as is (instruction counts).
    pub verbatim: Option<String>,
    /// The one-line conclusion that opens the section, computed from the figures
    /// ([`super::verdict`]); `None` when the figures it needs were not measured.
    pub verdict: Option<String>,
}

/// Every experiment, in report order.
pub const ALL: [Experiment; 6] = [
    seed000::EXPERIMENT,
    seed001::EXPERIMENT,
    seed002::EXPERIMENT,
    seed003::EXPERIMENT,
    seed004::EXPERIMENT,
    engine::EXPERIMENT,
];

/// Gathers `value(record)` of every round's records that `keep`, by
/// (`series(record)`, `x(record)`).
pub fn gather(
    rounds: &[Table],
    keep: impl Fn(&Record<'_>) -> bool,
    series: impl Fn(&Record<'_>) -> String,
    x: impl Fn(&Record<'_>) -> Option<f64>,
    value: impl Fn(&Record<'_>) -> Option<f64>,
) -> Samples {
    let mut samples = Samples::default();
    for table in rounds {
        for record in table.records().filter(|record| keep(record)) {
            if let (Some(x), Some(value)) = (x(&record), value(&record)) {
                samples.push(&series(&record), x, value);
            }
        }
    }
    samples
}

/// A line chart over thread counts (log₂ x) from `samples`.
pub fn thread_lines(
    id: &str,
    title: &str,
    y_label: &str,
    x_label: &str,
    samples: &Samples,
) -> Figure {
    let layout = Layout::Lines {
        x_label: x_label.to_owned(),
        log_x: true,
        log_y: false,
    };
    figure(id, title, y_label, layout, samples)
}

/// A grouped bar chart from `samples` whose x are indices into `categories`.
pub fn bars(
    id: &str,
    title: &str,
    y_label: &str,
    categories: Vec<String>,
    samples: &Samples,
) -> Figure {
    figure(id, title, y_label, Layout::Bars { categories }, samples)
}

fn figure(id: &str, title: &str, y_label: &str, layout: Layout, samples: &Samples) -> Figure {
    Figure {
        id: id.to_owned(),
        title: title.to_owned(),
        y_label: y_label.to_owned(),
        layout,
        series: series_of(samples),
    }
}

/// One chart series per series of `samples`, each point its spread over the rounds.
pub fn series_of(samples: &Samples) -> Vec<Series> {
    samples
        .spreads()
        .into_iter()
        .map(|(name, points)| Series { name, points })
        .collect()
}

/// A grid with one row per series and one column per x of `samples`, each cell the
/// point's spread formatted by `format`; `x_name` formats the column headers.
pub fn spread_grid(
    caption: &str,
    corner: &str,
    samples: &Samples,
    x_name: impl Fn(f64) -> String,
    format: impl Fn(f64) -> String + Copy,
) -> Grid {
    let spreads = samples.spreads();
    let mut xs: Vec<f64> = spreads
        .iter()
        .flat_map(|(_, points)| points.iter().map(|&(x, _)| x))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let mut header = vec![corner.to_owned()];
    header.extend(xs.iter().map(|&x| x_name(x)));
    let rows = spreads
        .iter()
        .map(|(name, points)| {
            let mut row = vec![name.clone()];
            row.extend(xs.iter().map(|&x| {
                points
                    .iter()
                    .find(|&&(px, _)| px == x)
                    .map_or_else(|| "–".to_owned(), |(_, spread)| spread.describe(format))
            }));
            row
        })
        .collect();
    Grid {
        caption: caption.to_owned(),
        header,
        rows,
    }
}

/// `value` with two decimals and a `×`.
pub fn times(value: f64) -> String {
    format!("{value:.2}×")
}

/// A note for a job that produced nothing: its problems, or "did not run".
pub fn missing(inputs: &Inputs<'_>, job: Job) -> Option<String> {
    if !inputs.rounds(job).is_empty() {
        return None;
    }
    let why = inputs
        .data
        .get(&job)
        .map(|data| data.problems.join("; "))
        .filter(|why| !why.is_empty())
        .unwrap_or_else(|| "did not run".into());
    Some(format!("not available: {} — {why}", job.name()))
}

/// A thread-count column header: `1 thread`, `8 threads`.
pub fn threads(x: f64) -> String {
    if x == 1.0 {
        "1 thread".into()
    } else {
        format!("{x:.0} threads")
    }
}
