//! `lutra [options] script.lua [args]`: runs `script.lua` as the main process, waits
//! for every process it started, and exits 0, or non-zero after an uncaught error or a
//! deadlock (see `lutra --help`).

use clap::Parser;
use lutra_lua::{LuaRuntime, Options, Outcome, SyncMode, WaitOutcome};
use lutra_sched::policy::Policy;
use std::process::ExitCode;

/// The program's allocator, which every process's Lua state allocates through:
/// mimalloc. glibc's malloc grows a worker thread's arena one page at a time, each
/// step a system call (`mprotect`) and a page fault: experiment 2's 100 live states
/// took about 2,800 of each; mimalloc maps its segments in large pieces (about 150
/// page faults).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const AFTER_HELP: &str = "\
The script runs as the main process, with the globals `lutra` (also `require \"lutra\"`)
and `arg`; `require \"luaproc\"` gives luaproc's API over the same runtime. When the
script returns, lutra waits for the processes still running (luaproc's semantics).

Exit status:
  0   the script and every process finished
  1   the script raised an error, a process failed and nobody joined it (each
      failure is printed with its traceback), or the script cannot be read
  2   deadlock: every process is blocked and nothing can wake them (the report
      says which process waits on what)
  64  usage error: an unknown option, a bad option value, no script (EX_USAGE)
  n   os.exit(n) in any process (see docs/lua-api.md)

A script may start with a `#!` line and a UTF-8 byte-order mark, as under lua5.4.

Scheduling policies (--policy): round-robin (alias rr, luts), ats, ciluts, ctluts,
  restart-profile (alias txlinux).
Contention managers (--cm): suicide, backoff, aggressive, timestamp, size_matters,
  priority.

The Lua API is documented in docs/lua-api.md.";

/// Runs a Lua script whose processes use every core.
#[derive(Parser, Debug)]
#[command(name = "lutra", version, about, long_about = None, after_help = AFTER_HELP)]
struct Cli {
    /// Worker threads, 1 to 1024 (default: one per core; more than the cores is
    /// allowed).
    #[arg(short = 'w', long, value_name = "N", value_parser = lutra_lua::parse_workers,
          allow_negative_numbers = true)]
    workers: Option<usize>,
    /// Scheduling policy for transactions (see below).
    #[arg(long, value_name = "NAME", value_parser = parse_policy)]
    policy: Option<Policy>,
    /// Contention manager for user transactions (see below).
    #[arg(long = "cm", value_name = "NAME", value_parser = parse_cm)]
    contention_manager: Option<String>,
    /// At exit, print processes spawned, messages sent and received, and per-site
    /// transaction commits and aborts (on standard error).
    #[arg(long)]
    stats: bool,
    /// Messages a process's mailbox buffers before `p:send` waits (0: rendezvous).
    #[arg(long, value_name = "N", default_value_t = Options::default().mailbox_capacity,
          value_parser = lutra_lua::parse_mailbox_capacity, allow_negative_numbers = true)]
    mailbox_cap: usize,
    /// Per-process memory limit, in bytes, or with a K, M or G suffix (a process
    /// over it fails with "not enough memory"; the others go on).
    #[arg(long, value_name = "BYTES", value_parser = lutra_lua::parse_bytes)]
    memory_limit: Option<usize>,
    /// Time slice in milliseconds: a process that runs this long without yielding is
    /// preempted so that others run (outside `atomic`; 0: never; 1 to 60000).
    #[arg(long, value_name = "MS", default_value_t = Options::default().preempt_slice_ms,
          value_parser = lutra_lua::parse_preempt, allow_negative_numbers = true)]
    preempt: u32,
    /// How the runtime's own structures are synchronised: `locks` or `tm`
    /// (transactions that wait by parking, never busy-waiting).
    #[arg(long, value_name = "MODE", default_value_t = SyncMode::Locks, value_parser = parse_sync)]
    sync: SyncMode,
    /// The script to run (`-` reads standard input).
    script: String,
    /// Arguments for the script (`arg[1]`…, and `...`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

fn parse_policy(name: &str) -> Result<Policy, String> {
    name.parse::<Policy>().map_err(|e| e.to_string())
}

fn parse_cm(name: &str) -> Result<String, String> {
    match lutra_stm::cm::by_name(name) {
        Some(_) => Ok(name.to_owned()),
        None => Err(format!(
            "unknown contention manager '{name}' (expected one of: {})",
            lutra_stm::cm::NAMES.join(", ")
        )),
    }
}

fn parse_sync(name: &str) -> Result<SyncMode, String> {
    name.parse()
}

impl Cli {
    fn options(&self) -> Options {
        Options {
            workers: self.workers,
            policy: self.policy.map(|p| p.name().to_owned()),
            contention_manager: self.contention_manager.clone(),
            mailbox_capacity: self.mailbox_cap,
            memory_limit: self.memory_limit,
            preempt_slice_ms: self.preempt,
            sync: self.sync,
            ..Options::default()
        }
    }
}

/// The exit status of a usage error (sysexits' `EX_USAGE`), apart from a deadlock's 2.
const EXIT_USAGE: u8 = 64;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // `--help` and `--version` print to standard output and succeed.
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { EXIT_USAGE } else { 0 });
        }
    };
    let source = match read_script(&cli.script) {
        Ok(source) => skip_prefix(source),
        Err(error) => {
            eprintln!("lutra: cannot read {}: {error}", cli.script);
            return ExitCode::from(1);
        }
    };
    let runtime = LuaRuntime::new(cli.options());
    let main = runtime.spawn_script(&format!("@{}", cli.script), source, cli.args.clone());
    let waited = runtime.wait();
    let mut status = 0;
    // Failures were reported when they happened (unless a joiner was waiting);
    // what is left unreported is reported now.
    if let Outcome::Failed(error) = main.outcome() {
        if !main.was_reported() {
            eprintln!("lutra: {error}");
        }
        status = 1;
    }
    for (process, error) in runtime.unjoined_failures() {
        if process.id() != main.id() {
            if !process.was_reported() {
                eprintln!(
                    "lutra: process#{} ({}) failed: {error}",
                    process.id(),
                    process.origin()
                );
            }
            status = 1;
        }
    }
    if let WaitOutcome::Deadlock(report) = waited {
        eprint!("lutra: {report}");
        status = 2;
    }
    if cli.stats {
        print_stats(&runtime);
    }
    // The program ends here: the pooled states' memory is left to the OS.
    runtime.close_pool_for_exit();
    ExitCode::from(status)
}

/// `--stats`: processes and messages, then commits and aborts per `atomic` site.
fn print_stats(runtime: &LuaRuntime) {
    let mut counts = runtime.stats();
    counts.transactions = None;
    let transactions = runtime.transaction_stats();
    let mut report = format!("lutra stats:\n{counts}");
    report.push_str(&format!(
        "transactions       {} commits, {} aborts\n",
        transactions.total.commits,
        transactions.total.total_aborts()
    ));
    for site in &transactions.sites {
        report.push_str(&format!(
            "  {:<36} {} commits, {} aborts\n",
            site.name,
            site.counters.commits,
            site.counters.total_aborts()
        ));
    }
    eprint!("{report}");
}

/// The chunk `lua5.4` would run from a file's bytes (as `luaL_loadfilex` does): a
/// UTF-8 byte-order mark is skipped, and a first line starting with `#` (a `#!` line)
/// is emptied, its newline kept so that line numbers stay those of the file.
fn skip_prefix(mut source: Vec<u8>) -> Vec<u8> {
    if source.starts_with(b"\xEF\xBB\xBF") {
        source.drain(..3);
    }
    if source.first() == Some(&b'#') {
        let end = source
            .iter()
            .position(|&b| b == b'\n')
            .unwrap_or(source.len());
        source.drain(..end);
    }
    source
}

fn read_script(path: &str) -> std::io::Result<Vec<u8>> {
    if path == "-" {
        let mut source = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut source)?;
        Ok(source)
    } else {
        std::fs::read(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebang_and_bom_are_skipped() {
        assert_eq!(
            skip_prefix(b"#!/usr/bin/env lutra\nprint(1)".to_vec()),
            b"\nprint(1)"
        );
        assert_eq!(skip_prefix(b"\xEF\xBB\xBFprint(1)".to_vec()), b"print(1)");
        assert_eq!(
            skip_prefix(b"\xEF\xBB\xBF# x\nprint(1)".to_vec()),
            b"\nprint(1)"
        );
        assert_eq!(skip_prefix(b"#".to_vec()), b"");
        assert_eq!(skip_prefix(b"print(1) -- #".to_vec()), b"print(1) -- #");
    }

    #[test]
    fn worker_counts_beyond_the_limit_are_refused() {
        let too_many = (lutra_lua::MAX_WORKERS + 1).to_string();
        for bad in ["0", "-3", "abc", too_many.as_str(), "65535"] {
            assert!(
                Cli::try_parse_from(["lutra", "-w", bad, "s.lua"]).is_err(),
                "{bad}"
            );
        }
        let cli = Cli::try_parse_from(["lutra", "-w", "1024", "s.lua"]).unwrap();
        assert_eq!(cli.workers, Some(lutra_lua::MAX_WORKERS));
    }

    #[test]
    fn options_reach_the_runtime_options() {
        let cli = Cli::parse_from([
            "lutra",
            "-w",
            "3",
            "--policy",
            "ats",
            "--cm",
            "backoff",
            "--mailbox-cap",
            "5",
            "--memory-limit",
            "1M",
            "--preempt",
            "0",
            "--sync",
            "tm",
            "script.lua",
            "a",
            "-b",
        ]);
        let options = cli.options();
        assert_eq!(options.workers, Some(3));
        assert_eq!(options.policy.as_deref(), Some("ats"));
        assert_eq!(options.contention_manager.as_deref(), Some("backoff"));
        assert_eq!(options.mailbox_capacity, 5);
        assert_eq!(options.memory_limit, Some(1 << 20));
        assert_eq!(options.preempt_slice_ms, 0);
        assert_eq!(options.sync, SyncMode::Tm);
        assert_eq!(cli.args, ["a", "-b"]);
    }

    #[test]
    fn unknown_names_are_refused() {
        assert!(Cli::try_parse_from(["lutra", "--policy", "fifo", "s.lua"]).is_err());
        assert!(Cli::try_parse_from(["lutra", "--cm", "polite", "s.lua"]).is_err());
        assert!(Cli::try_parse_from(["lutra", "--sync", "spin", "s.lua"]).is_err());
        assert!(Cli::try_parse_from(["lutra", "-w", "0", "s.lua"]).is_err());
    }

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
