//! `cbench`: the C benchmark (`bench/c`) side by side, in one run: the same C sources
//! built sequentially (no instrumentation), against Lutra (`stm.h`, `liblutra.a`) and
//! against GCC's own STM (`gcc -fgnu-tm`, libitm), on 1, 2, 8 and 64 threads.
//! libitm runs twice: as a user gets it (one thread: serial and uninstrumented,
//! since nothing can conflict) and with its multi-lock STM forced
//! (`ITM_DEFAULT_METHOD=ml_wt`). When `TINYSTM_SRC` names tinySTM's sources, tinySTM
//! too (`scripts/build-tinystm.sh`, its default build, through the same `stm.h`
//! calls as Lutra), with `lutra ÷ tinystm` per thread count and the target of 1.1x
//! at 2 threads; without it, a note on stderr and no tinySTM rows.
//!
//! Workloads: the bank with audits at 64 and 4096 accounts; integer sets as a linked
//! list, a red-black tree and a hash table at 10% and 50% updates; a reservation
//! system in the shape of STAMP's vacation. Every row's `vs_seq` is its throughput
//! over the sequential build's at 1 thread; the sequential build also runs on 2 and
//! 8 threads with a copy of the state per thread (nothing shared: the machine's
//! ceiling), and `vs_ceiling` compares with it. Contenders alternate within each round (the
//! order rotates); the best of `--rounds` is kept.
//!
//! Prints one table per workload, the issue's targets with what was measured, and
//! writes `target/bench/cbench.csv` (one row per workload × system × threads).
//!
//! `--count` instead counts instructions per operation under callgrind
//! (`bench/c/count.c`, differential runs n vs 2n), for Lutra with statistics off
//! and on, libitm (its default method and `ml_wt`, `gl_wt`) and the bare loop
//! (sequential build); writes `target/bench/cbench-count.csv`.
//!
//! ```text
//! cargo run --release -p lutra-bench --bin cbench               # full (≈ 6 min)
//! cargo run --release -p lutra-bench --bin cbench -- --quick    # ≈ 40 s
//! cargo run --release -p lutra-bench --bin cbench -- --count    # ≈ 1 min
//! ```
//!
//! The driver builds `liblutra.a` (`cargo build --release -p lutra-capi`) and the C
//! programs (`make -C bench/c`) first.

mod compile;
mod count;
mod run;
mod table;

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// The C benchmark: sequential, Lutra and libitm builds of the same C sources.
#[derive(Parser, Debug)]
#[command(version)]
pub(crate) struct Args {
    /// A CI-size run: 1 and 2 threads, 150 ms runs, one round.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Count instructions per operation under callgrind instead of timing.
    #[arg(long)]
    pub(crate) count: bool,
    /// Workloads, comma-separated [default: all].
    #[arg(long, value_delimiter = ',', value_parser = run::WORKLOADS)]
    pub(crate) only: Option<Vec<String>>,
    /// Thread counts, comma-separated [default: 1,2,8,64; --quick: 1,2].
    #[arg(long, value_delimiter = ',')]
    pub(crate) threads: Option<Vec<usize>>,
    /// Milliseconds per run [default: 400; --quick: 150].
    #[arg(long)]
    pub(crate) millis: Option<u64>,
    /// Rounds; the best run of each is kept [default: 3; --quick: 1].
    #[arg(long)]
    pub(crate) rounds: Option<usize>,
    /// Repetitions n of the instruction count (n and 2n are measured).
    #[arg(long, default_value_t = 1000)]
    pub(crate) reps: usize,
    /// The repository [default: found from this binary's build].
    #[arg(long)]
    pub(crate) root: Option<PathBuf>,
    /// Where to write the CSV file [default: target/bench/cbench.csv, or
    /// target/bench/cbench-count.csv with --count].
    #[arg(long)]
    pub(crate) csv: Option<PathBuf>,
    /// Do not rebuild liblutra.a (use the one in target/release).
    #[arg(long)]
    pub(crate) no_cargo: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let programs = match compile::build(&args) {
        Ok(programs) => programs,
        Err(error) => {
            eprintln!("cbench: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = if args.count {
        count::main(&args, &programs)
    } else {
        run::main(&args, &programs)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cbench: {error}");
            ExitCode::FAILURE
        }
    }
}
