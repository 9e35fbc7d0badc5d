//! The workloads: what a benchmark runs, apart from how it is timed, repeated and
//! reported (that is [`crate::harness`]).
//!
//! | workload | file | what it does |
//! |----------|------|--------------|
//! | integer sets | `intset/` | sorted linked list, skip list, red-black tree and hash set, written once over [`intset::Access`] and run transactionally or directly |
//! | `intset` | `intset_workload.rs` | the operation mix over a set (lookups, inserts, removes at an update rate), run on any contender |
//! | `bank` | `bank.rs` | accounts, transfers and read-only audits that check the total |
//! | `gil` | `gil_loops.rs` | seed 000's While, Iterator and conflict loops under the elided global lock |
//! | `pipeline` | `pipeline.rs` | TxLinux's pipeline: 8 phases, memory mostly private to a phase |
//!
//! # Invariants
//! - A workload's operations are deterministic given the thread's generator
//!   ([`thread_rng`]): the same thread index draws the same keys in every run.
//! - Each workload checks its own result (a set's contents, a bank's total): a wrong
//!   answer panics the run rather than being timed.

pub mod bank;
pub mod gil_loops;
pub mod intset;
pub mod intset_workload;
pub mod pipeline;

/// A seeded generator for thread `index` of a run (reproducible key sequences).
pub fn thread_rng(index: usize) -> fastrand::Rng {
    fastrand::Rng::with_seed(0x006c_7574_7261_u64 ^ (index as u64).wrapping_mul(0x9E37_79B9))
}
