//! `lutra [options] script.lua [args]`: runs `script.lua` as the main process, waits
//! for every process it started, and exits 0, or non-zero after an uncaught error or a
//! deadlock (see `lutra --help`).

use clap::Parser;
use lutra_lua::{LuaRuntime, Options, Outcome, SyncMode, WaitOutcome};
use lutra_sched::policy::Policy;
use std::process::ExitCode;

const AFTER_HELP: &str = "\
The script runs as the main process, with the globals `lutra` (also `require \"lutra\"`)
and `arg`; `require \"luaproc\"` gives luaproc's API over the same runtime. When the
script returns, lutra waits for the processes still running (luaproc's semantics).

Exit status:
  0  the script and every process finished
  1  the script raised an error, or a process failed and nobody joined it
     (each failure is printed with its traceback)
  2  deadlock: every process is blocked and nothing can wake them (the report
     says which process waits on what)

Scheduling policies (--policy): round-robin (alias rr, luts), ats, ciluts, ctluts,
  restart-profile (alias txlinux).
Contention managers (--cm): suicide, backoff, aggressive, timestamp, size_matters,
  priority.

The Lua API is documented in docs/lua-api.md.";

/// Runs a Lua script whose processes use every core.
#[derive(Parser, Debug)]
#[command(name = "lutra", version, about, long_about = None, after_help = AFTER_HELP)]
struct Cli {
    /// Worker threads (default: one per core; more than the cores is allowed).
    #[arg(short = 'w', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    workers: Option<u16>,
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
    #[arg(long, value_name = "N", default_value_t = Options::default().mailbox_capacity)]
    mailbox_cap: usize,
    /// Per-process memory limit, in bytes, or with a K, M or G suffix (a process
    /// over it fails with "not enough memory"; the others go on).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    memory_limit: Option<usize>,
    /// Lua VM instructions a process runs before it is preempted so that others run
    /// (outside `atomic`; 0: never; any hook makes CPU-bound Lua about 2x slower).
    #[arg(long, value_name = "N", default_value_t = Options::default().preempt_instructions)]
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

/// `1048576`, `512K`, `64M`, `1G` (powers of 1024).
fn parse_bytes(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let (digits, scale) = match text.char_indices().last() {
        Some((i, 'k' | 'K')) => (&text[..i], 1usize << 10),
        Some((i, 'm' | 'M')) => (&text[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&text[..i], 1 << 30),
        _ => (text, 1),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("'{text}' is not a size in bytes (e.g. 1048576, 512K, 64M)"))
}

impl Cli {
    fn options(&self) -> Options {
        Options {
            workers: self.workers.map(usize::from),
            policy: self.policy.map(|p| p.name().to_owned()),
            contention_manager: self.contention_manager.clone(),
            mailbox_capacity: self.mailbox_cap,
            memory_limit: self.memory_limit,
            preempt_instructions: self.preempt,
            sync: self.sync,
            ..Options::default()
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let source = match read_script(&cli.script) {
        Ok(source) => source,
        Err(error) => {
            eprintln!("lutra: cannot read {}: {error}", cli.script);
            return ExitCode::from(1);
        }
    };
    let runtime = LuaRuntime::new(cli.options());
    let main = runtime.spawn_script(&format!("@{}", cli.script), source, cli.args.clone());
    let waited = runtime.wait();
    let mut status = 0;
    if let Outcome::Failed(error) = main.outcome() {
        eprintln!("lutra: {error}");
        status = 1;
    }
    for (process, error) in runtime.unjoined_failures() {
        if process.id() != main.id() {
            eprintln!(
                "lutra: process#{} ({}) failed: {error}",
                process.id(),
                process.origin()
            );
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
    fn sizes_take_suffixes() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("512K"), Ok(512 << 10));
        assert_eq!(parse_bytes("64m"), Ok(64 << 20));
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("lots").is_err());
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
        assert_eq!(options.preempt_instructions, 0);
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
