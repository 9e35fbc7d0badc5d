//! Lutra's benchmarks: the `intset` and bank workloads on the STM, beside an
//! unsynchronized sequential run and global locks; and the same workloads (with
//! TxLinux's pipeline) on the scheduler's tasks, oversubscribed.
//!
//! The crate is in two parts:
//! - [`workloads`]: what a benchmark runs (the integer sets, the bank, the
//!   pipeline), reusable by any binary or test.
//! - [`harness`]: how it is run and reported (timed runs on threads or tasks, the
//!   contenders, sweeps, the text tables, CSV files, and the suite of every seed's
//!   experiment with its charts and report: the `lutra-bench` binary, `make bench`).
//!
//! The binaries (`src/bin/`) are `intset`, `bank`, `oversub`, `gil`, `coop`,
//! `inversion`, `yields`, `sharedbench`, `cbench`, `luabench`, `demo` and
//! `lutra-bench` (the suite).

pub mod harness;
pub mod workloads;
