//! The synchronisation primitives that the model-checked protocols are built from:
//! the deadlock detector's wake-up protocol (`liveness.rs`) and a channel's queues and
//! waiters (`channel/core.rs`).
//!
//! Normally these are `std`'s. With the `shuttle` feature they are shuttle's (every
//! access a scheduling point: shuttle explores interleavings, each atomic
//! sequentially consistent); with the `loom` feature, loom's (loom also explores the
//! reorderings the memory model allows for each `Ordering` chosen). If both features
//! are on, loom wins. The models' own threads (`thread`) come from the same checker.
//!
//! Every `cfg` on a model checker belongs here, not in the protocols' logic.

#[cfg(not(any(feature = "shuttle", feature = "loom")))]
pub(crate) use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
#[cfg(not(any(feature = "shuttle", feature = "loom")))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(all(feature = "shuttle", not(feature = "loom")))]
pub(crate) use shuttle::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
#[cfg(all(feature = "shuttle", not(feature = "loom")))]
pub(crate) use shuttle::sync::{Mutex, MutexGuard};
#[cfg(all(test, feature = "shuttle", not(feature = "loom")))]
pub(crate) use shuttle::{sync::atomic::AtomicBool, thread};

#[cfg(feature = "loom")]
pub(crate) use loom::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
#[cfg(feature = "loom")]
pub(crate) use loom::sync::{Mutex, MutexGuard};
#[cfg(all(test, feature = "loom"))]
pub(crate) use loom::{sync::atomic::AtomicBool, thread};
