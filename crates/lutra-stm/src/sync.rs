//! The synchronisation primitives the engine is built from.
//!
//! Normally these are `std`'s; with the `shuttle` feature they are shuttle's, so the
//! model checks in `tests/model.rs` explore the engine's own commit, validation and
//! wake-up protocols rather than a copy of them. Transactional data words are always
//! `std` atomics: they are the program's memory, not the engine's.

#[cfg(not(feature = "shuttle"))]
pub(crate) use std::sync::Mutex;
#[cfg(not(feature = "shuttle"))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(not(feature = "shuttle"))]
pub(crate) use std::thread;
#[cfg(not(feature = "shuttle"))]
pub(crate) use std::thread_local;

#[cfg(feature = "shuttle")]
pub(crate) use shuttle::sync::Mutex;
#[cfg(feature = "shuttle")]
pub(crate) use shuttle::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(feature = "shuttle")]
pub(crate) use shuttle::thread;
#[cfg(feature = "shuttle")]
pub(crate) use shuttle::thread_local;

/// Locks `mutex`, ignoring poisoning: every structure the engine guards with a mutex
/// is left consistent before any code that could panic runs under it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> impl std::ops::DerefMut<Target = T> + '_ {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
