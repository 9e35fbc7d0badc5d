//! `lutra [options] [script [args]]`: the command line of `lua5.4`
//! (`command_line.rs`), run by a main process (`driver.rs`), with lutra's options
//! before the script. Waits for every process the program started, and exits 0, or
//! non-zero after an uncaught error or a deadlock (see `lutra --help`).

mod command_line;
mod driver;

use command_line::{Request, UsageError};
use lutra_lua::{LuaRuntime, Outcome, WaitOutcome};
use std::process::ExitCode;

/// The program's allocator, which every process's Lua state allocates through:
/// mimalloc. glibc's malloc grows a worker thread's arena one page at a time, each
/// step a system call (`mprotect`) and a page fault: experiment 2's 100 live states
/// took about 2,800 of each; mimalloc maps its segments in large pieces (about 150
/// page faults).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `lutra --help`.
const HELP: &str = "\
Runs a Lua script whose processes use every core.

Usage: lutra [options] [script [args]]

Options (before the script; everything after it is the script's):
  -e stat              execute string 'stat'
  -i                   enter interactive mode after executing 'script'
  -l mod               require library 'mod' into global 'mod'
  -l g=mod             require library 'mod' into global 'g'
  -v                   show version information
  -E                   ignore environment variables
  -W                   turn warnings on
  --                   stop handling options
  -                    stop handling options and execute stdin
  -w, --workers N      worker threads, 1 to 1024 (default: one per core)
      --policy NAME    scheduling policy for transactions (see below)
      --cm NAME        contention manager for user transactions (see below)
      --stats          at exit, print processes spawned, messages sent and received,
                       blocked calls handed off, and per-site transaction commits
                       and aborts (standard error)
      --mailbox-cap N  messages a mailbox buffers before `p:send` waits (0:
                       rendezvous; default 1024)
      --memory-limit BYTES
                       per-process memory limit (K, M or G suffix allowed)
      --preempt MS     time slice: a process running this long without yielding is
                       preempted (outside `atomic`; 0: never; default 5)
      --sync MODE      the runtime's own structures: locks (default) or tm
      --max-blocking-threads N
                       threads that may take over the workers of threads blocked
                       in C calls (0 to 4096; 0: a blocked call keeps its worker;
                       default 128)
  -h, --help           print this help
      --version        print lutra's version

With no script, lutra runs standard input, or opens an interactive prompt when
standard input is a terminal (as lua5.4 does). The script runs as the main process,
with the globals `lutra` (also `require \"lutra\"`) and `arg`; `require \"luaproc\"`
gives luaproc's API over the same runtime. When the script returns, lutra waits for
the processes still running (luaproc's semantics). LUA_INIT_5_4 / LUA_INIT run
first; LUA_PATH_5_4, LUA_PATH, LUA_CPATH_5_4 and LUA_CPATH set every process's
package.path and package.cpath (\";;\" is the default).

Exit status:
  0   the script and every process finished
  1   the script raised an error, a process failed and nobody joined it (each
      failure is printed with its traceback), or the script cannot be opened, read
      or parsed
  2   deadlock: every process is blocked and nothing can wake them (the report
      says which process waits on what)
  64  usage error: an unknown option, a bad option value (EX_USAGE)
  n   os.exit(n) in any process (see docs/lua-api.md)

A script may start with a `#!` line and a UTF-8 byte-order mark, as under lua5.4.

Scheduling policies (--policy): round-robin (alias rr, luts), ats, ciluts, ctluts,
  restart-profile (alias txlinux).
Contention managers (--cm): suicide, backoff, aggressive, timestamp, size_matters,
  priority.

The command line and the Lua API are documented in docs/cli.md and docs/lua-api.md.
";

/// The exit status of a usage error (sysexits' `EX_USAGE`), apart from a deadlock's 2.
const EXIT_USAGE: u8 = 64;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args_os()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let invocation = match command_line::parse(argv) {
        Ok(Request::Run(invocation)) => invocation,
        Ok(Request::Help) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Ok(Request::Version) => {
            println!(
                "lutra {} ({})",
                env!("CARGO_PKG_VERSION"),
                driver::lua_copyright()
            );
            return ExitCode::SUCCESS;
        }
        Err(UsageError(message)) => {
            eprintln!(
                "lutra: {message}\nusage: lutra [options] [script [args]] (lutra --help lists the options)"
            );
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let runtime = LuaRuntime::new(invocation.options.clone());
    // Reports name the main process by its script ("stdin", or the program's name
    // with no script), not by the driver.
    let origin = match invocation.script_name() {
        Some(_) if invocation.script_is_stdin() => "stdin".to_owned(),
        Some(script) => script.to_owned(),
        None => invocation.argv[0].clone(),
    };
    let main = runtime.spawn_main(
        driver::CHUNK_NAME,
        origin,
        driver::SOURCE.as_bytes().to_vec(),
        driver::arguments(&invocation),
    );
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
    if invocation.stats {
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
