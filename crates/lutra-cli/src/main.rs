//! `lutra [options] script.lua [args]`: runs `script.lua` as the main process, waits
//! for every process it started, and exits 0, or non-zero after an uncaught error or a
//! deadlock (see `lutra --help`).

use clap::Parser;
use lutra_lua::{LuaRuntime, Options, Outcome, WaitOutcome};
use std::process::ExitCode;

/// Runs a Lua script whose processes use every core.
#[derive(Parser, Debug)]
#[command(name = "lutra", version, about, long_about = None)]
struct Cli {
    /// Worker threads (default: one per core).
    #[arg(short = 'w', long)]
    workers: Option<usize>,
    /// Messages a process's mailbox buffers before `p:send` waits.
    #[arg(long, default_value_t = 1024)]
    mailbox_cap: usize,
    /// Per-process memory limit in bytes (a process over it fails with
    /// "not enough memory"; the others go on).
    #[arg(long)]
    memory_limit: Option<usize>,
    /// Lua instructions a process runs before it is preempted (0: never).
    #[arg(long, default_value_t = 100_000)]
    preempt: u32,
    /// The script to run (`-` reads standard input).
    script: String,
    /// Arguments for the script (`arg[1]`…, and `...`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
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
    let options = Options {
        workers: cli.workers,
        mailbox_capacity: cli.mailbox_cap,
        memory_limit: cli.memory_limit,
        preempt_instructions: cli.preempt,
        ..Options::default()
    };
    let runtime = LuaRuntime::new(options);
    let main = runtime.spawn_script(&format!("@{}", cli.script), source, cli.args);
    let waited = runtime.wait();
    let mut status = 0;
    if let Outcome::Failed(error) = main.outcome() {
        eprintln!("lutra: {error}");
        status = 1;
    }
    for (process, error) in runtime.unjoined_failures() {
        if process.id() != main.id() {
            eprintln!("lutra: process#{} ({}) failed: {error}", process.id(), process.origin());
            status = 1;
        }
    }
    if let WaitOutcome::Deadlock(report) = waited {
        eprint!("lutra: {report}");
        status = 2;
    }
    ExitCode::from(status)
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
