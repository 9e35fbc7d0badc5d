//! Seed 002's programs on Ruby Ractors (`bench/ruby/fib_hub.rb`, `word_count.rb`): the
//! same work as `bench/lua/fib_hub.lua` and `word_count.lua` at luabench's sizes, each
//! run serially and on Ractors, so that each system's speed-up is over its own serial
//! run. A round runs fib serial, fib on Ractors, word count serial, word count on
//! Ractors, each as a child process timed from outside (elapsed time, and processor
//! time from `getrusage(RUSAGE_CHILDREN)`), and writes them as a CSV table.

use super::jobs::{Places, Scale, lua_data};
use crate::harness::csv::{Csv, Table};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The CSV columns of a round.
pub const HEADER: &str = "program,workload,group,mode,workers,wall_s,cpu_s";

/// `fib(n)` × requests, documents × words: luabench's sizes (its `plan.rs`); the
/// report checks that luabench's groups carry the same names.
fn sizes(scale: Scale) -> (u32, u32, usize) {
    match scale {
        Scale::Full => (22, 1000, 64),
        _ => (20, 400, 32),
    }
}

/// The fib group's name, as luabench writes it.
pub fn fib_group(scale: Scale) -> String {
    let (n, requests, _) = sizes(scale);
    format!("fib({n})x{requests}")
}

/// The word-count group's name, as luabench writes it.
pub fn wc_group(scale: Scale) -> String {
    format!("{} docs", sizes(scale).2)
}

/// `ruby --version` when Ruby 3 (Ractors) is installed.
pub fn version() -> Option<String> {
    let out = Command::new("ruby").arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && text.starts_with("ruby 3")).then_some(text)
}

/// Runs one round (see the module header) and returns its table; the programs'
/// output goes to `log`.
///
/// # Errors
/// A program fails or prints no `ok` line, or the documents are missing.
pub fn run_round(scale: Scale, places: &Places, round: usize, log: &Path) -> Result<Table, String> {
    let (n, requests, docs) = sizes(scale);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let workers = (cores.max(2) * 2).to_string();
    let scripts = places.repo.join("bench").join("ruby");
    let fib = scripts.join("fib_hub.rb").display().to_string();
    let wc = scripts.join("word_count.rb").display().to_string();
    let files = documents(&lua_data(places), docs)?;
    let (n, requests) = (n.to_string(), requests.to_string());
    let mut records = Vec::new();
    let runs: [(&str, String, &str, Vec<String>); 4] = [
        (
            "fib",
            fib_group(scale),
            "serial",
            vec![fib.clone(), "serial".into(), n.clone(), requests.clone()],
        ),
        (
            "fib",
            fib_group(scale),
            "ractors",
            vec![fib, "hub".into(), n, requests, workers.clone()],
        ),
        (
            "wc",
            wc_group(scale),
            "serial",
            [wc.clone(), "serial".into(), "1".into()]
                .into_iter()
                .chain(files.iter().cloned())
                .collect(),
        ),
        (
            "wc",
            wc_group(scale),
            "ractors",
            [wc, "hub".into(), workers.clone()]
                .into_iter()
                .chain(files.iter().cloned())
                .collect(),
        ),
    ];
    for (workload, group, mode, args) in runs {
        let (wall, cpu) = timed(&args, log)
            .map_err(|error| format!("round {}: ruby {workload} {mode}: {error}", round + 1))?;
        let used = if mode == "serial" {
            "1"
        } else {
            workers.as_str()
        };
        records.push(crate::fields![
            "ruby",
            workload,
            group,
            mode,
            used,
            format!("{wall:.4}"),
            format!("{cpu:.4}"),
        ]);
    }
    let path = places
        .out
        .join("csv")
        .join(format!("ruby-r{}.csv", round + 1));
    let written = Csv::with_header(&path, HEADER).and_then(|mut csv| csv.write_records(records));
    written
        .and_then(|()| Table::read(&path))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The documents luabench generated for `count` documents.
fn documents(data: &Path, count: usize) -> Result<Vec<String>, String> {
    let text = data.join("text");
    let prefix = format!("docs-{count}x");
    let dir: Option<PathBuf> = std::fs::read_dir(&text)
        .ok()
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with(&prefix))
        });
    let dir = dir.ok_or_else(|| {
        format!(
            "no documents in {} (luabench's word count makes them)",
            text.display()
        )
    })?;
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "txt"))
        .map(|path| path.display().to_string())
        .collect();
    files.sort();
    files.truncate(count);
    Ok(files)
}

/// Runs `ruby args…`, appending its output to `log`; returns elapsed and processor
/// seconds.
fn timed(args: &[String], log: &Path) -> Result<(f64, f64), String> {
    let before = children_cpu();
    let start = Instant::now();
    let out = Command::new("ruby")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ruby: {e}"))?;
    let wall = start.elapsed().as_secs_f64();
    let cpu = children_cpu() - before;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut text = format!("$ ruby {}\n{stdout}{stderr}", args.join(" "));
    if text.len() > 4000 {
        text.truncate(4000);
    }
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut file| std::io::Write::write_all(&mut file, text.as_bytes()));
    if !out.status.success() || !stdout.contains(": ok") {
        return Err(format!(
            "exit {}: {}",
            out.status,
            stderr.lines().last().unwrap_or("no ok line")
        ));
    }
    Ok((wall, cpu))
}

/// Processor seconds of the waited-for children so far.
fn children_cpu() -> f64 {
    // SAFETY: getrusage writes only into the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
