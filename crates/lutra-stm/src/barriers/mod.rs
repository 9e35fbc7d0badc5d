//! The barriers: transactional reads and writes, conflicts and snapshot validation.
//!
//! - `access.rs`: the read and write barriers, their one inlined dispatch each.
//! - `conflict.rs`: conflicts with other attempts, locking, validation and the
//!   snapshot's extension.

pub(crate) mod access;
pub(crate) mod conflict;
