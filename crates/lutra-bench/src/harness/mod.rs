//! The harness: how a benchmark times, repeats, measures and reports the
//! [`crate::workloads`], and the suite that runs every binary and charts the results.
//!
//! | module | job |
//! |--------|-----|
//! | [`measure`] | fixed-duration runs on many OS threads; what a run reports ([`measure::Sample`]) |
//! | [`tasks`] | the same runs on the scheduler's tasks ([`tasks::Runner`]) |
//! | [`contender`] | the implementations a run compares (sequential, ceiling, locks, STM design × manager) |
//! | [`sweep`] | the command-line options and loop of the contender sweeps (`intset`, `bank`) |
//! | [`oversub`] | more threads than cores: threads against tasks under each policy |
//! | [`report`] | a sweep's rows, their derived figures, table and CSV records |
//! | [`table`] | the one text-table printer of every binary |
//! | [`csv`] | CSV files, written and read back through the `csv` crate |
//! | [`interconnect`] | the core-to-core round trip, printed beside tables |
//! | [`memory`] | a counting allocator and the memory of a big shared-table transaction |
//! | [`suite`] | every seed's experiment in rounds, with load measurement, charts and a report |
//!
//! # Invariants
//! - The harness names workloads only to drive them (a binary's closure, the
//!   oversubscription modes). A workload uses the harness only to run (on a
//!   [`contender::Contender`], through [`measure::timed`]): it knows nothing of
//!   rounds, tables, CSV or charts.

pub mod contender;
pub mod csv;
pub mod interconnect;
pub mod measure;
pub mod memory;
pub mod oversub;
pub mod report;
pub mod suite;
pub mod sweep;
pub mod table;
pub mod tasks;
