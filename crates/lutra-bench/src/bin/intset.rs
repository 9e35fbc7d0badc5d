//! The `intset` benchmark: each structure × update rate × contender × thread count.
//!
//! ```text
//! cargo run --release -p lutra-bench --bin intset                # full sweep (≈ 8–10 min on 2 cores)
//! cargo run --release -p lutra-bench --bin intset -- --quick     # smoke sweep (≈ 1–2 min)
//! cargo run --release -p lutra-bench --bin intset -- --structures rbtree --updates 20 \
//!     --threads 1,2 --designs wb-etl --managers timestamp,backoff
//! ```

use clap::Parser;
use lutra_bench::harness::sweep::{self, SweepArgs};
use lutra_bench::workloads::intset::Structure;
use lutra_bench::workloads::intset_workload::IntsetWorkload;

/// Integer sets on the STM against sequential, Mutex and RwLock baselines.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Structures, comma-separated (list, skip, rbtree, hash).
    #[arg(long, value_delimiter = ',', value_parser = Structure::from_name,
          default_values = ["list", "skip", "rbtree", "hash"])]
    structures: Vec<Structure>,
    /// Update rates in percent, comma-separated (half inserts, half removes).
    #[arg(long, value_delimiter = ',', default_values_t = [0, 20, 50, 100],
          value_parser = clap::value_parser!(u32).range(0..=100))]
    updates: Vec<u32>,
    /// Initial number of keys (keys are drawn from twice as many) [default: 256 for
    /// the list, 1024 for the others].
    #[arg(long)]
    initial: Option<usize>,
    #[command(flatten)]
    sweep: SweepArgs,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let workloads: Vec<IntsetWorkload> = args
        .structures
        .iter()
        .flat_map(|&structure| {
            let initial = args.initial.unwrap_or(structure.default_initial());
            args.updates
                .iter()
                .map(move |&update_percent| IntsetWorkload {
                    structure,
                    initial,
                    update_percent,
                })
        })
        .collect();
    sweep::run("intset", &args.sweep, &workloads)?;
    Ok(())
}
