//! Lutra's benchmarks: the `intset` and bank workloads on the STM, beside an
//! unsynchronized sequential run and global locks; and the same workloads (with
//! TxLinux's pipeline) on the scheduler's tasks, oversubscribed.
//!
//! - [`intset`]: sorted linked list, skip list, red-black tree and hash set, written
//!   once over [`intset::Access`] and run transactionally or directly.
//! - [`bank`]: accounts, transfers and read-only audits.
//! - [`measure`]: fixed-duration runs on many threads.
//! - [`contender`]: the implementations a run compares (sequential, the two-copy
//!   ceiling, `Mutex`, `RwLock`, each STM design × contention manager).
//! - [`report`]: result rows and their table; [`table`]: the one text-table printer
//!   of every binary; [`csv`]: CSV files, written
//!   and read back through the `csv` crate.
//! - [`sweep`]: the command-line options and loop shared by the benchmark binaries.
//! - [`tasks`]: the same timed (or scripted) runs on the scheduler's tasks, beside OS
//!   threads ([`tasks::Runner`]).
//! - [`pipeline`]: TxLinux's pipeline workload (8 phases, memory mostly private to a
//!   phase, the phase as transaction id).
//! - [`oversub`]: more threads than cores, plain threads against tasks under each
//!   scheduling policy; a scripted conflict pattern compared by counts.
//!
//! - [`memory`]: a counting allocator and the memory of one transaction of many
//!   shared-table inserts (`sharedbench`, and the test that bounds it).
//!
//! - [`suite`]: every seed's experiment run together, with charts and a report
//!   (the `lutra-bench` binary, `make bench`).
//!
//! The binaries (`src/bin/`) are `intset`, `bank`, `oversub`, `gil`, `coop`,
//! `inversion`, `luabench`, `demo` and `lutra-bench` (the suite).

pub mod bank;
pub mod contender;
pub mod csv;
pub mod interconnect;
pub mod intset;
pub mod measure;
pub mod memory;
pub mod oversub;
pub mod pipeline;
pub mod report;
pub mod suite;
pub mod sweep;
pub mod table;
pub mod tasks;
pub mod workload;
