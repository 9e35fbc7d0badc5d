//! Lutra's benchmarks: the `intset` and bank workloads on the STM, beside an
//! unsynchronized sequential run and global locks.
//!
//! - [`intset`]: sorted linked list, skip list, red-black tree and hash set, written
//!   once over [`intset::Access`] and run transactionally or directly.
//! - [`bank`]: accounts, transfers and read-only audits.
//! - [`measure`]: fixed-duration runs on many threads.
//! - [`contender`]: the implementations a run compares (sequential, the two-copy
//!   ceiling, `Mutex`, `RwLock`, each STM design × contention manager).
//! - [`report`]: result rows and the on-screen table; [`csv`]: the CSV file.
//! - [`sweep`]: the command-line options and loop shared by the benchmark binaries.
//!
//! The binaries (`src/bin/`) are `intset`, `bank` and `demo`.

pub mod bank;
pub mod contender;
pub mod csv;
pub mod intset;
pub mod measure;
pub mod report;
pub mod sweep;
pub mod workload;
