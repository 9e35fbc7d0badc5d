//! One timed run of a program (`lutra` or `lua5.4`) as a child process: its elapsed
//! time, the CPU time it used (user + system of all its threads, from
//! `getrusage(RUSAGE_CHILDREN)` around its wait), and whether it printed its "ok".
//!
//! # Protocol
//! 1. Read the children's CPU counters, note the time, start the child with its
//!    output sent to files (a chatty child never blocks on a full pipe).
//! 2. Wait for it (a blocking wait: the runner takes no CPU from the child); a
//!    watchdog thread kills it past the time limit.
//! 3. Note the time, read the counters again: runs are made one at a time, so the
//!    difference is this child's CPU time.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What one run measured.
#[derive(Clone, Debug, Default)]
pub(crate) struct Measured {
    /// Seconds from start to exit.
    pub(crate) wall: f64,
    /// User + system CPU seconds of the child (all threads).
    pub(crate) cpu: f64,
    /// The child exited 0 and printed `<name>: ok`.
    pub(crate) ok: bool,
    /// Why it failed (first lines of its standard error), if it did.
    pub(crate) problem: String,
    /// The figures the script measured itself (`figure NAME VALUE` lines, see
    /// `figures.rs`).
    // `sharedbench` shares this file and reads no figure.
    #[allow(dead_code)]
    pub(crate) figures: Vec<(String, f64)>,
}

impl Measured {
    /// Average number of busy cores: CPU time ÷ elapsed time.
    pub(crate) fn cores_busy(&self) -> f64 {
        if self.wall > 0.0 {
            self.cpu / self.wall
        } else {
            0.0
        }
    }
}

fn children_cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable `rusage`; RUSAGE_CHILDREN is a valid `who`.
    let status = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) };
    if status != 0 {
        return 0.0;
    }
    // SAFETY: getrusage returned 0, so it filled `usage`.
    let usage = unsafe { usage.assume_init() };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// What to run: a program, its arguments and extra environment variables.
pub(crate) struct Invocation<'a> {
    pub(crate) program: &'a Path,
    pub(crate) args: &'a [String],
    pub(crate) env: &'a [(String, String)],
}

/// Runs `invocation` in `dir`, expecting `expect` in its standard output.
pub(crate) fn run(
    invocation: Invocation<'_>,
    dir: &Path,
    expect: &str,
    limit: Duration,
) -> Measured {
    let program = invocation.program;
    let scratch = std::env::temp_dir().join(format!("luabench-{}", std::process::id()));
    let (out_path, err_path) = (scratch.with_extension("out"), scratch.with_extension("err"));
    let files = std::fs::File::create(&out_path)
        .and_then(|out| Ok((out, std::fs::File::create(&err_path)?)));
    let (out, err) = match files {
        Ok(files) => files,
        Err(error) => return failed(format!("cannot create output files: {error}")),
    };
    let cpu_before = children_cpu_seconds();
    let start = Instant::now();
    let mut child = match Command::new(program)
        .args(invocation.args)
        .envs(invocation.env.iter().map(|(name, value)| (name, value)))
        .current_dir(dir)
        // As a shell sets it for the programs it starts in `dir`.
        .env(
            "PWD",
            std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned()),
        )
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
    {
        Ok(child) => child,
        Err(error) => return failed(format!("cannot start {}: {error}", program.display())),
    };
    let status = wait_at_most(&mut child, start, limit);
    let wall = start.elapsed().as_secs_f64();
    let cpu = children_cpu_seconds() - cpu_before;
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    let problem = match status {
        None => format!("killed after {limit:?}"),
        Some(status) if !status.success() => {
            let first: Vec<&str> = stderr.lines().take(3).collect();
            format!("exit {:?}: {}", status.code(), first.join(" | "))
        }
        Some(_) if !stdout.contains(expect) => format!("output lacks {expect:?}"),
        Some(_) => String::new(),
    };
    Measured {
        wall,
        cpu,
        ok: problem.is_empty(),
        problem,
        figures: parse_figures(&stdout),
    }
}

/// The `figure NAME VALUE` lines of a run's standard output, in order (lines that do
/// not parse are left out).
fn parse_figures(stdout: &str) -> Vec<(String, f64)> {
    stdout
        .lines()
        .filter_map(|line| {
            let mut words = line.strip_prefix("figure ")?.split_whitespace();
            let name = words.next()?;
            let value = words.next()?.parse::<f64>().ok()?;
            Some((name.to_owned(), value))
        })
        .collect()
}

fn failed(problem: String) -> Measured {
    Measured {
        problem,
        ..Measured::default()
    }
}

/// Waits for `child`; `None` when the watchdog killed it after `limit`.
fn wait_at_most(child: &mut Child, start: Instant, limit: Duration) -> Option<ExitStatus> {
    // `true` once the child was reaped: the watchdog must not signal a reused pid.
    let reaped = Arc::new(Mutex::new(false));
    let killed = Arc::new(Mutex::new(false));
    let pid = child.id();
    let watchdog = {
        let (reaped, killed) = (reaped.clone(), killed.clone());
        std::thread::spawn(move || {
            while start.elapsed() < limit {
                std::thread::park_timeout(Duration::from_millis(100));
                if *reaped.lock().unwrap_or_else(|p| p.into_inner()) {
                    return;
                }
            }
            let reaped = reaped.lock().unwrap_or_else(|p| p.into_inner());
            if !*reaped {
                *killed.lock().unwrap_or_else(|p| p.into_inner()) = true;
                // SAFETY: a plain syscall with no memory involved. (Were the child
                // reaped in the instant between `wait` returning and `reaped` being
                // set, the pid could in theory be reused: a race at the time limit
                // only, accepted for a benchmark runner.)
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            }
        })
    };
    let status = child.wait().ok();
    *reaped.lock().unwrap_or_else(|p| p.into_inner()) = true;
    watchdog.thread().unpark();
    let _ = watchdog.join();
    if *killed.lock().unwrap_or_else(|p| p.into_inner()) {
        return None;
    }
    status
}

#[cfg(test)]
mod tests {
    use super::parse_figures;

    #[test]
    fn figure_lines_are_parsed_and_others_left_out() {
        let out = "figure p99 0.0612\nprompt: ok 40\nfigure rate x\nfigure median 0.055\n";
        assert_eq!(
            parse_figures(out),
            [("p99".to_owned(), 0.0612), ("median".to_owned(), 0.055)]
        );
    }
}
