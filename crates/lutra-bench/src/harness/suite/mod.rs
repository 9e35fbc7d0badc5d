//! The benchmark suite behind `lutra-bench` (and `make bench`): every seed's
//! experiment, each beside its reference in the same run, as CSV, charts and one
//! report.
//!
//! # Protocol
//! 1. The machine is described and a [`machine::LoadMonitor`] starts sampling.
//! 2. For each chosen experiment, in report order, a load window opens and its jobs
//!    run round by round: round 1 of every job, then round 2, …, so that a change in
//!    the machine's load hits every contender alike. A job another experiment already
//!    ran is not run again (seed 003's pipeline and seed 004 share `oversub`); the
//!    window of the experiment that ran a job counts as that job's load.
//! 3. Each experiment's figures and tables are made from its jobs' CSV tables; charts
//!    go to `<out>/charts` (SVG and PNG), the report to `<out>/report.md` and
//!    `<out>/report.html`.
//! 4. With `publish`, the charts (SVG) and a copy of the Markdown report go to that
//!    directory (the README's `docs/bench/`).
//!
//! Progress: one bar per experiment (its rounds) under a bar for the whole run,
//! whose unit is the estimated second, so that its estimate of the time left follows
//! the machine's actual speed.
//!
//! Modules: [`jobs`] (the binaries and their sizes), [`ruby`] (seed 002 on Ractors),
//! [`spread`] (min/median/max), [`machine`] (cores, load), [`experiment`] and one
//! module per experiment, [`chart`] and [`font`] (drawing), [`report`]. The jobs' CSV
//! files are read through [`crate::harness::csv::Table`].

pub mod chart;
pub mod engine;
pub mod experiment;
pub mod font;
pub mod jobs;
pub mod machine;
pub mod report;
pub mod ruby;
pub mod seed000;
pub mod seed001;
pub mod seed002;
pub mod seed003;
pub mod seed004;
pub mod spread;
pub mod style;
pub mod verdict;

use experiment::{Experiment, Inputs};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use jobs::{Job, JobData, Places, Scale};
use machine::{LoadMonitor, Machine, WindowLoad};
use report::{Chart, RunInfo, Section};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Sizes and rounds.
    pub scale: Scale,
    /// Experiment ids (empty: all).
    pub only: Vec<String>,
    /// Programs and output.
    pub places: Places,
    /// Where to copy the charts and the report for the README (`docs/bench`).
    pub publish: Option<PathBuf>,
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The Markdown report.
    pub markdown: PathBuf,
    /// The HTML report.
    pub html: PathBuf,
    /// Every chart drawn (PNG and SVG).
    pub charts: Vec<PathBuf>,
    /// Figures with data that could not be drawn, with the reason (figures without
    /// data, because a job did not run, are not counted: the report says why).
    pub undrawn: Vec<String>,
}

/// The experiments named by `only` (all when empty), in report order.
///
/// # Errors
/// A name that is no experiment's id.
pub fn select(only: &[String]) -> Result<Vec<Experiment>, String> {
    for name in only {
        if !experiment::ALL.iter().any(|e| e.id == name) {
            return Err(format!(
                "unknown experiment {name:?}; the experiments are {}",
                experiment::ALL.map(|e| e.id).join(", ")
            ));
        }
    }
    Ok(experiment::ALL
        .into_iter()
        .filter(|e| only.is_empty() || only.iter().any(|name| name == e.id))
        .collect())
}

/// Runs the suite (see the module protocol).
///
/// # Errors
/// An unknown experiment, or an I/O error writing the report.
pub fn run(options: &Options) -> io::Result<Outcome> {
    let experiments =
        select(&options.only).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let started = Instant::now();
    let machine = Machine::probe();
    let info_started = utc_now();
    let monitor = LoadMonitor::start();
    let places = &options.places;
    std::fs::create_dir_all(&places.out)?;
    let scale = options.scale;

    let mut planned: Vec<Job> = Vec::new();
    for job in experiments.iter().flat_map(|e| e.jobs.iter().copied()) {
        if !planned.contains(&job) {
            planned.push(job);
        }
    }
    let estimate: f64 = planned
        .iter()
        .map(|job| job.estimate(scale) * job.rounds(scale) as f64)
        .sum();
    let multi = MultiProgress::new();
    if !console_attached() {
        multi.set_draw_target(ProgressDrawTarget::hidden());
    }
    let total = multi.add(ProgressBar::new((estimate * 10.0).ceil() as u64));
    total.set_style(
        ProgressStyle::with_template(
            "{prefix:>10} [{bar:30}] {elapsed_precise} elapsed, about {eta} left",
        )
        .expect("the template is valid")
        .progress_chars("=> "),
    );
    total.set_prefix("all");
    if console_attached() {
        // Elapsed time and the estimate move between rounds too.
        total.enable_steady_tick(std::time::Duration::from_millis(500));
    }
    status(
        &multi,
        &format!(
            "lutra-bench: {} run, {} experiments, about {:.0} s on two idle cores; output in {}",
            scale.name(),
            experiments.len(),
            estimate,
            places.out.display()
        ),
    );

    let mut data: BTreeMap<Job, JobData> = BTreeMap::new();
    let mut job_load: BTreeMap<Job, WindowLoad> = BTreeMap::new();
    for experiment in &experiments {
        let fresh: Vec<Job> = experiment
            .jobs
            .iter()
            .copied()
            .filter(|job| !data.contains_key(job))
            .collect();
        let steps: usize = fresh.iter().map(|job| job.rounds(scale)).sum();
        let bar = multi.insert_before(&total, ProgressBar::new(steps as u64));
        bar.set_style(
            ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len} {msg}")
                .expect("the template is valid")
                .progress_chars("=> "),
        );
        bar.set_prefix(experiment.id);
        status(&multi, &format!("{}: {}", experiment.id, experiment.title));
        let window = monitor.open();
        for job in &fresh {
            data.insert(
                *job,
                JobData {
                    log: places.out.join("logs").join(format!("{}.log", job.name())),
                    ..JobData::default()
                },
            );
            let _ = std::fs::remove_file(&data[job].log);
        }
        let most = fresh.iter().map(|job| job.rounds(scale)).max().unwrap_or(0);
        for round in 0..most {
            for &job in fresh.iter().filter(|job| round < job.rounds(scale)) {
                bar.set_message(format!(
                    "{} round {}/{}",
                    job.name(),
                    round + 1,
                    job.rounds(scale)
                ));
                let entry = data.get_mut(&job).expect("inserted above");
                job.run_round(scale, places, round, entry);
                bar.inc(1);
                total.inc((job.estimate(scale) * 10.0).round() as u64);
            }
        }
        let load = monitor.close(window);
        for job in &fresh {
            job_load.insert(*job, load);
        }
        bar.finish_with_message(format!("done in {:.0} s", load.elapsed.as_secs_f64()));
    }
    total.finish_and_clear();
    drop(multi);

    let inputs = Inputs {
        data: &data,
        scale,
        cores: machine.cores,
    };
    let charts_dir = places.out.join("charts");
    let mut sections = Vec::new();
    let mut outcome_charts = Vec::new();
    let mut undrawn = Vec::new();
    for experiment in &experiments {
        let findings = (experiment.analyze)(&inputs);
        let load = experiment
            .jobs
            .iter()
            .filter(|job| data.get(job).is_some_and(|d| !d.rounds.is_empty()))
            .filter_map(|job| job_load.get(job))
            .copied()
            .reduce(worse);
        // A chart carries its own caveats: a reduced run, a loaded machine.
        let mut tags = Vec::new();
        if scale != Scale::Full {
            tags.push(format!("{} run", scale.name()));
        }
        if load.is_some_and(|load| load.is_loaded(machine.cores)) {
            tags.push("LOADED".to_owned());
        }
        let charts: Vec<Chart> = findings
            .figures
            .iter()
            .map(|figure| {
                let mut figure = figure.clone();
                if !tags.is_empty() {
                    figure.title = format!("{} [{}]", figure.title, tags.join(", "));
                }
                let drawn = if figure.has_points() {
                    figure.draw(&charts_dir)
                } else {
                    Err("no data".into())
                };
                match &drawn {
                    Ok(files) => outcome_charts.extend([files.png.clone(), files.svg.clone()]),
                    Err(why) if figure.has_points() => {
                        undrawn.push(format!("{}: {why}", figure.id))
                    }
                    Err(_) => {}
                }
                Chart {
                    id: figure.id.clone(),
                    title: figure.title.clone(),
                    drawn,
                }
            })
            .collect();
        sections.push(Section {
            experiment: *experiment,
            findings,
            charts,
            load,
        });
    }
    let info = RunInfo {
        machine,
        scale: scale.name(),
        started: info_started,
        commit: commit(&places.repo),
        seconds: started.elapsed().as_secs_f64(),
        load_after: machine::load_average().map(|[one, _, _]| one),
    };
    let markdown = places.out.join("report.md");
    let html = places.out.join("report.html");
    std::fs::write(
        &markdown,
        report::markdown(&info, &sections, "charts/", "png"),
    )?;
    std::fs::write(&html, report::html(&info, &sections))?;
    if let Some(dir) = &options.publish {
        publish(dir, &info, &sections)?;
    }
    Ok(Outcome {
        markdown,
        html,
        charts: outcome_charts,
        undrawn,
    })
}

/// Copies every drawn chart's SVG (small, text kept as text) and a Markdown report
/// linking them to `dir`.
fn publish(dir: &Path, info: &RunInfo, sections: &[Section]) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for chart in sections.iter().flat_map(|s| &s.charts) {
        if let Ok(drawn) = &chart.drawn {
            std::fs::copy(&drawn.svg, dir.join(format!("{}.svg", chart.id)))?;
        }
    }
    std::fs::write(
        dir.join("report.md"),
        report::markdown(info, sections, "", "svg"),
    )
}

/// The load of two windows: the one with more foreign load.
fn worse(a: WindowLoad, b: WindowLoad) -> WindowLoad {
    if b.foreign_cores.unwrap_or(0.0) > a.foreign_cores.unwrap_or(0.0) {
        b
    } else {
        a
    }
}

/// Whether progress bars can be drawn (standard error is a terminal).
fn console_attached() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

/// A line above the bars, or on standard error when they are hidden.
fn status(multi: &MultiProgress, line: &str) {
    if console_attached() {
        let _ = multi.println(line);
    } else {
        eprintln!("{line}");
    }
}

fn utc_now() -> String {
    stdout_of(Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]))
}

fn commit(repo: &Path) -> String {
    stdout_of(
        Command::new("git")
            .args(["rev-parse", "--short", "HEAD"])
            .current_dir(repo),
    )
}

/// What `command` printed, trimmed; `unknown` when it cannot run or fails.
fn stdout_of(command: &mut Command) -> String {
    command
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map_or_else(
            || "unknown".into(),
            |out| String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        )
}
