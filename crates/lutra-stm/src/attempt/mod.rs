//! The attempt: a descriptor runs one attempt of a transaction at a time.
//!
//! - `descriptor.rs`: [`TxDescriptor`](crate::TxDescriptor) and `Core` (the state of
//!   one attempt), creating a descriptor, beginning a transaction, its accessors.
//! - `lifecycle.rs`: an attempt's begin and end: announced, solo or irrevocable;
//!   doomed; idle, quiescent and counted.
//! - `operations.rs`: what a running attempt does through its descriptor (reads,
//!   writes, frees, irrevocability, commit), each forwarding to its protocol.
//! - `mode.rs`: the attempt's mode and the transaction's escalation, every mode and
//!   every transition in one table.
//! - `commit.rs`: the commit protocol (one function, two paths) and the rollback.
//! - `driven.rs`: checkpoints and `retry` for drivers that run attempts one call at a
//!   time.
//! - `abort.rs`: why an attempt ended without committing.

pub(crate) mod abort;
pub(crate) mod commit;
pub(crate) mod descriptor;
pub(crate) mod driven;
pub(crate) mod lifecycle;
pub(crate) mod mode;
pub(crate) mod operations;
