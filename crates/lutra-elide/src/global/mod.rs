//! A global lock elided by transactions, with per-site adaptive transaction length
//! (Odaira and Castanos, "Eliminating Global Interpreter Locks in Ruby through Hardware
//! Transactional Memory", seed 000, Section IV and Figs. 1-3).
//!
//! Critical sections are loops of steps separated by yield points
//! ([`LiveThread::run_steps`]). A transaction covers a number of yield points, its
//! length, kept per yield-point site and adapted while the site is profiled. It runs
//! speculatively — a software transaction by default, an x86 RTM transaction when asked
//! for and present, or a scripted fake for tests ([`Backend`]) — and falls back to
//! taking the lock after persistent aborts or too many transient ones; it then runs as
//! an irrevocable software transaction, which drains the others (libitm's serial
//! mode). With a single live thread it takes the lock at once.
//!
//! # Protocol
//! 1. A thread registers ([`GlobalLock::register`]), counting as live.
//! 2. Each transaction begins at a yield point: Fig. 1 (`begin.rs`) with the decisions
//!    of `policy.rs` and the length of `length.rs`.
//! 3. Its steps run (`steps.rs`) through a [`Section`] until `length` yield points,
//!    then it commits (Fig. 2), speculatively (`backend/`) or under the lock
//!    (`lock.rs`); the next begins at the yield point it ended at.
//!
//! Files: `config.rs` every tunable; `lock.rs` the lock word (spin, then block);
//! `policy.rs` abort classes and retry limits; `length.rs` per-site length; `begin.rs`
//! one transaction to its commit; `steps.rs` the step loop; `section.rs` what a step
//! sees; `backend/` the speculation backends; `stats.rs` counters per site; `gil.rs`
//! the lock and its live threads.

mod backend;
mod begin;
mod config;
mod gil;
mod length;
mod lock;
mod policy;
mod section;
mod stats;
mod steps;

pub use backend::{AbortBeyond, Backend, RandomAborts, Replay, Script};
pub use config::{Adaptive, GilConfig, LengthPolicy};
pub use gil::{GlobalLock, LiveThread};
pub use policy::{AbortClass, FallbackCause};
pub use section::Section;
pub use stats::{GilStats, SiteStats};
pub use steps::Step;
