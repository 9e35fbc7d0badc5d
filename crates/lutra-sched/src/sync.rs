//! The synchronisation primitives that the scheduler's model-checked protocols are
//! built from.
//!
//! Normally these are `std`'s. With the `shuttle` feature they are shuttle's, so the
//! model checks (`queue/idle.rs`, `queue/transactional.rs`) explore the run queues'
//! own sleep/wake and hand-over protocols rather than a copy of them: every lock,
//! wait and atomic access here is one of shuttle's scheduling points. Shuttle runs
//! its threads on one OS thread, so per-thread state (`thread_local`) must be
//! shuttle's too, or its threads would share it. The feature also runs `lutra-stm`
//! on shuttle (the transactional queue's private engine).
//!
//! With the `loom` feature the atomics, fences, locks and condition variables are
//! loom's, which also explores the reorderings each chosen `Ordering` allows (lock
//! mode's idle protocol, `queue/idle.rs`); thread-locals stay `std`'s (no model under
//! loom reads one). If both features are on, loom wins.
//!
//! Every `cfg` on a model checker belongs here, not in the scheduler's logic.

#[cfg(not(any(feature = "shuttle", feature = "loom")))]
pub(crate) use std::sync::atomic::{AtomicUsize, Ordering, fence};
#[cfg(not(any(feature = "shuttle", feature = "loom")))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(feature = "shuttle"))]
pub(crate) use std::thread_local;

#[cfg(all(feature = "shuttle", not(feature = "loom")))]
pub(crate) use shuttle::sync::atomic::{AtomicUsize, Ordering, fence};
#[cfg(all(feature = "shuttle", not(feature = "loom")))]
pub(crate) use shuttle::sync::{Condvar, Mutex, MutexGuard};
#[cfg(feature = "shuttle")]
pub(crate) use shuttle::thread_local;
#[cfg(all(test, feature = "shuttle", not(feature = "loom")))]
pub(crate) use shuttle::{sync::atomic::AtomicBool, thread};

#[cfg(feature = "loom")]
pub(crate) use loom::sync::atomic::{AtomicUsize, Ordering, fence};
#[cfg(feature = "loom")]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(all(test, feature = "loom"))]
pub(crate) use loom::{sync::atomic::AtomicBool, thread};
