//! The sets of an attempt.
//!
//! - `read_set.rs`: the read set and its front, which the inlined read tests.
//! - `write_set.rs`: the write set (with `or_else` checkpoints) and the lock set.
//! - `keyed.rs`: the entries, and the keyed vectors (linear, then indexed) and word
//!   maps that hold them.
//! - `undo_log.rs`: a solo attempt's undo log and the window it is written through.

pub(crate) mod keyed;
pub(crate) mod read_set;
pub(crate) mod undo_log;
pub(crate) mod write_set;
