//! The bank benchmark: transfers and read-only audits, for each number of accounts ×
//! contender × thread count. Every audit checks the total inside its transaction.
//!
//! ```text
//! cargo run --release -p lutra-bench --bin bank                  # full sweep (≈ 1 min)
//! cargo run --release -p lutra-bench --bin bank -- --quick
//! cargo run --release -p lutra-bench --bin bank -- --accounts 16 --audit-percent 20
//! ```

use clap::Parser;
use lutra_bench::harness::sweep::{self, SweepArgs};
use lutra_bench::workloads::bank::BankWorkload;

/// Bank transfers and audits on the STM against sequential, Mutex and RwLock baselines.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Numbers of accounts, comma-separated (fewer accounts, more conflicts).
    #[arg(long, value_delimiter = ',', default_values_t = [64, 1024])]
    accounts: Vec<usize>,
    /// Percentage of operations that are audits (read every account); the rest are
    /// transfers between two random accounts.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(0..=100))]
    audit_percent: u32,
    #[command(flatten)]
    sweep: SweepArgs,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let workloads: Vec<BankWorkload> = args
        .accounts
        .iter()
        .filter(|&&accounts| accounts > 0)
        .map(|&accounts| BankWorkload {
            accounts,
            audit_percent: args.audit_percent,
        })
        .collect();
    sweep::run("bank", &args.sweep, &workloads)?;
    Ok(())
}
