//! The runs behind the experiments: each [`Job`] is one benchmark binary (or the Ruby
//! programs) run once per round with the sizes of the chosen [`Scale`], its CSV kept
//! per round, its output kept in a log.
//!
//! # Protocol
//! 1. [`Job::command`] builds the round's command line (or says why the job cannot
//!    run: a binary not built, `ruby` not installed).
//! 2. [`Job::run_round`] runs it with standard output and error appended to the job's
//!    log, waits for it, and reads the CSV the round wrote.
//! 3. A failed round is recorded with the end of its log; the other rounds still run.

use super::ruby;
use crate::harness::csv::Table;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How big a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Tiny sizes, only the Rust benchmarks: a check that the suite works (seconds).
    Smoke,
    /// Reduced sizes: everything in about a minute.
    Quick,
    /// The sizes the figures are meant to be read at (≈ 15 minutes on 2 cores).
    Full,
}

impl Scale {
    /// The name the report prints.
    pub fn name(self) -> &'static str {
        match self {
            Self::Smoke => "smoke",
            Self::Quick => "quick",
            Self::Full => "full",
        }
    }
}

/// One benchmark program of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Job {
    /// `gil`: seed 000's loops on the elided global lock.
    Gil,
    /// `luabench --only exp1,exp2,exp3`: seed 001 under lutra and lua5.4.
    LuaProc,
    /// `luabench --only fib,wc`: seed 002 under lutra and lua5.4.
    LuaRactor,
    /// `bench/ruby/*.rb`: seed 002 on Ruby Ractors.
    Ruby,
    /// `inversion`: seed 003's priority inversions.
    Inversion,
    /// `coop`: seed 003's cooperative locks against a mutex.
    Coop,
    /// `oversub`: seed 004's oversubscription curves (and seed 003's pipeline).
    Oversub,
    /// `cbench`: the C benchmark beside libitm and sequential code.
    Cbench,
    /// `cbench --count`: instructions per operation.
    CbenchCount,
}

/// Where the suite finds its programs and puts its files.
#[derive(Clone, Debug)]
pub struct Places {
    /// The directory of the benchmark binaries (beside `lutra-bench`).
    pub bin_dir: PathBuf,
    /// The repository's root (for `bench/ruby`).
    pub repo: PathBuf,
    /// The output directory (`csv/`, `logs/`, `charts/`, the report).
    pub out: PathBuf,
}

/// A command to run for one round, or why there is none.
#[derive(Clone, Debug)]
pub enum Invocation {
    /// The program and its arguments; the CSV it writes.
    Run {
        /// The program.
        program: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// The CSV file the round writes (`None`: the output is the result).
        csv: Option<PathBuf>,
    },
    /// Run by the suite itself (the Ruby programs).
    Internal,
    /// The job cannot run here.
    Unavailable(String),
}

/// What the rounds of a job produced.
#[derive(Clone, Debug, Default)]
pub struct JobData {
    /// One table per successful round, in round order.
    pub rounds: Vec<Table>,
    /// Standard output of the last successful round (for jobs whose output is the
    /// result, like instruction counts).
    pub output: String,
    /// Why the job did not run, or the failures of its rounds.
    pub problems: Vec<String>,
    /// The job's log.
    pub log: PathBuf,
}

impl Job {
    /// A short name (file names, progress).
    pub fn name(self) -> &'static str {
        match self {
            Self::Gil => "gil",
            Self::LuaProc => "luabench-luaproc",
            Self::LuaRactor => "luabench-ractor",
            Self::Ruby => "ruby",
            Self::Inversion => "inversion",
            Self::Coop => "coop",
            Self::Oversub => "oversub",
            Self::Cbench => "cbench",
            Self::CbenchCount => "cbench-count",
        }
    }

    /// Rounds at `scale` (instruction counts are deterministic: one round).
    pub fn rounds(self, scale: Scale) -> usize {
        match (self, scale) {
            (Self::CbenchCount, _) => 1,
            (_, Scale::Smoke) => 2,
            (_, Scale::Quick) => 3,
            (Self::LuaProc | Self::LuaRactor | Self::Ruby | Self::Cbench, Scale::Full) => 3,
            (_, Scale::Full) => 5,
        }
    }

    /// Estimated seconds of one round on two idle cores (for the time left).
    pub fn estimate(self, scale: Scale) -> f64 {
        // Measured on the shared 2-core VM (quick: a --quick suite run; full: one
        // round of each binary at the full sizes).
        let (smoke, quick, full) = match self {
            Self::Gil => (0.7, 3.0, 16.0),
            Self::LuaProc => (0.0, 12.0, 100.0),
            Self::LuaRactor => (0.0, 1.2, 10.0),
            Self::Ruby => (0.0, 1.2, 5.0),
            Self::Inversion => (0.3, 1.7, 8.0),
            Self::Coop => (0.2, 0.5, 4.0),
            Self::Oversub => (0.5, 3.5, 20.0),
            Self::Cbench => (0.0, 4.0, 35.0),
            Self::CbenchCount => (0.0, 20.0, 40.0),
        };
        match scale {
            Scale::Smoke => smoke,
            Scale::Quick => quick,
            Scale::Full => full,
        }
    }

    /// The command of round `round` at `scale`.
    pub fn command(self, scale: Scale, places: &Places, round: usize) -> Invocation {
        if scale == Scale::Smoke
            && !matches!(
                self,
                Self::Gil | Self::Inversion | Self::Coop | Self::Oversub
            )
        {
            return Invocation::Unavailable(
                "skipped by --smoke (the Lua, Ruby and C runs take tens of seconds and \
                 need lutra, ruby, gcc and valgrind)"
                    .into(),
            );
        }
        if self == Self::Ruby {
            return match ruby::version() {
                Some(_) => Invocation::Internal,
                None => {
                    Invocation::Unavailable("`ruby` (3.x, with Ractors) is not installed".into())
                }
            };
        }
        let binary = match self {
            Self::LuaProc | Self::LuaRactor => "luabench",
            Self::Cbench | Self::CbenchCount => "cbench",
            other => other.name(),
        };
        let program = places.bin_dir.join(binary);
        if !program.is_file() {
            return Invocation::Unavailable(format!(
                "{} is not built (cargo build --release -p lutra-bench --bins)",
                program.display()
            ));
        }
        let csv = places
            .out
            .join("csv")
            .join(format!("{}-r{}.csv", self.name(), round + 1));
        let args = self.args(scale, places, &program, &csv);
        let csv = if args.iter().any(|a| a == "--csv") {
            Some(csv)
        } else if self == Self::Cbench {
            // cbench without --csv writes its default file.
            Some(places.repo.join("target").join("bench").join("cbench.csv"))
        } else {
            None
        };
        Invocation::Run { program, args, csv }
    }

    fn args(self, scale: Scale, places: &Places, program: &Path, csv: &Path) -> Vec<String> {
        let pick = |smoke: &str, quick: &str, full: &str| -> Vec<String> {
            let chosen = match scale {
                Scale::Smoke => smoke,
                Scale::Quick => quick,
                Scale::Full => full,
            };
            chosen.split_whitespace().map(str::to_owned).collect()
        };
        let mut args = match self {
            Self::Gil => pick(
                "--threads 1,2 --duration-ms 5",
                "--threads 1,2,4,8 --duration-ms 30",
                "--threads 1,2,4,8 --duration-ms 200",
            ),
            Self::LuaProc | Self::LuaRactor => {
                let only = if self == Self::LuaProc {
                    "exp1,exp2,exp3"
                } else {
                    "fib,wc"
                };
                let mut args = pick("--quick", "--quick", "");
                args.extend(["--only".into(), only.into(), "--repeats".into(), "1".into()]);
                args.push("--data".into());
                args.push(lua_data(places).display().to_string());
                args
            }
            Self::Inversion => pick(
                "--duration-ms 20",
                "--duration-ms 200",
                "--duration-ms 1000",
            ),
            Self::Coop => pick(
                "--threads 1,2 --duration-ms 5",
                "--threads 1,2,4 --duration-ms 50",
                "--threads 1,2,4,8 --duration-ms 300",
            ),
            Self::Oversub => pick(
                "--threads 1,4 --duration-ms 5 --policies round-robin,restart-profile",
                "--threads 1,2,8,64 --duration-ms 30",
                "--threads 1,2,4,8,16,32,64 --duration-ms 150",
            ),
            Self::Cbench | Self::CbenchCount => {
                // cbench is another helper's: use the options its --help offers.
                let help = help_text(program);
                let mut args = Vec::new();
                if self == Self::CbenchCount {
                    args.push("--count".into());
                }
                let offers = |flag: &str| help.contains(flag);
                if scale != Scale::Full && offers("--quick") {
                    args.push("--quick".into());
                }
                if self == Self::Cbench {
                    // The suite makes the rounds; its quick run keeps three workloads.
                    if offers("--rounds") {
                        args.extend(["--rounds".into(), "1".into()]);
                    }
                    if scale != Scale::Full && offers("--only") {
                        args.extend(["--only".into(), "bank64,rbtree10,list10".into()]);
                    }
                    if offers("--millis") {
                        let millis = if scale == Scale::Full { "200" } else { "60" };
                        args.extend(["--millis".into(), millis.into()]);
                    }
                }
                if offers("--no-cargo") {
                    // `make bench-build` built liblutra.a.
                    args.push("--no-cargo".into());
                }
                if help.contains("--csv") {
                    args.extend(["--csv".into(), csv.display().to_string()]);
                }
                return args;
            }
            Self::Ruby => Vec::new(),
        };
        if self == Self::Gil {
            args.extend(
                [
                    "--workloads",
                    "while,iterator,conflict",
                    "--repeat",
                    "1",
                    "--trace",
                ]
                .map(String::from),
            );
        }
        if self == Self::Oversub {
            args.extend(["--workloads", "bank,intset,pipeline"].map(String::from));
        }
        args.extend(["--csv".into(), csv.display().to_string()]);
        args
    }

    /// Runs round `round`, appending to `data`.
    pub fn run_round(self, scale: Scale, places: &Places, round: usize, data: &mut JobData) {
        match self.command(scale, places, round) {
            Invocation::Unavailable(why) => {
                if !data.problems.contains(&why) {
                    data.problems.push(why);
                }
            }
            Invocation::Internal => match ruby::run_round(scale, places, round, &data.log) {
                Ok(table) => {
                    data.rounds.push(table);
                }
                Err(error) => data.problems.push(format!("round {}: {error}", round + 1)),
            },
            Invocation::Run { program, args, csv } => {
                match run_logged(&program, &args, &places.repo, &data.log) {
                    Ok(output) => {
                        data.output = output;
                        match csv.map(|csv| (Table::read(&csv), csv)) {
                            Some((Ok(table), _)) => data.rounds.push(table),
                            Some((Err(error), csv)) => data.problems.push(format!(
                                "round {}: {}: {error}",
                                round + 1,
                                csv.display()
                            )),
                            None => data.rounds.push(Table::default()),
                        }
                    }
                    Err(error) => data.problems.push(format!("round {}: {error}", round + 1)),
                }
            }
        }
    }
}

/// Where luabench's generated inputs go (the Ruby word count reads them too).
pub fn lua_data(places: &Places) -> PathBuf {
    places.out.join("lua-data")
}

fn help_text(program: &Path) -> String {
    Command::new(program)
        .arg("--help")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default()
}

/// Runs `program` in `dir` with both outputs appended to `log`; returns what it
/// wrote to standard output, or an error with the end of the log.
///
/// # Errors
/// The program cannot start or exits unsuccessfully.
pub fn run_logged(
    program: &Path,
    args: &[String],
    dir: &Path,
    log: &Path,
) -> Result<String, String> {
    let mut file = open_log(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let start = file.seek(SeekFrom::End(0)).unwrap_or(0);
    let _ = writeln!(file, "$ {} {}", program.display(), args.join(" "));
    let err = file.try_clone().map_err(|e| e.to_string())?;
    let status = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(file.try_clone().map_err(|e| e.to_string())?)
        .stderr(err)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    let mut written = String::new();
    let mut reader = File::open(log).map_err(|e| e.to_string())?;
    reader
        .seek(SeekFrom::Start(start))
        .map_err(|e| e.to_string())?;
    reader
        .read_to_string(&mut written)
        .map_err(|e| e.to_string())?;
    if status.success() {
        Ok(written)
    } else {
        let tail: Vec<&str> = written.lines().rev().take(4).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Err(format!(
            "{} exited with {status}: {}",
            program
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            tail.join(" / ")
        ))
    }
}

fn open_log(log: &Path) -> io::Result<File> {
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir)?;
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(log)
}
