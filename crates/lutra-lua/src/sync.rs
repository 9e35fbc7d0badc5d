//! The synchronisation primitives that the model-checked protocols are built from:
//! the deadlock detector's wake-up protocol (`liveness.rs`) and a channel's queues and
//! waiters (`channel/core.rs`).
//!
//! Normally these are `std`'s atomics and parking_lot's mutex, which knows no
//! poisoning (the channels took a poisoned `std` lock as it was anyway). With the
//! `shuttle` feature they are shuttle's (every access a scheduling point: shuttle
//! explores interleavings, each atomic sequentially consistent); with the `loom` feature, loom's (loom also explores the
//! reorderings the memory model allows for each `Ordering` chosen). If both features
//! are on, loom wins. The models' own threads (`thread`) come from the same checker.
//!
//! Every `cfg` on a model checker belongs here, not in the protocols' logic.

#[cfg(not(any(feature = "shuttle", feature = "loom")))]
pub(crate) use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
// A channel's lock is taken two or three times per message: parking_lot's takes and
// releases it with one compare-and-swap each, without `std`'s poison bookkeeping (a
// look at the thread's panic count on each side).
#[cfg(not(any(feature = "shuttle", feature = "loom")))]
pub(crate) use parking_lot::{Mutex, MutexGuard};

#[cfg(all(feature = "shuttle", not(feature = "loom")))]
pub(crate) use checked::{Mutex, MutexGuard};
#[cfg(all(feature = "shuttle", not(feature = "loom")))]
use shuttle::sync as checker;
#[cfg(all(feature = "shuttle", not(feature = "loom")))]
pub(crate) use shuttle::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
#[cfg(all(test, feature = "shuttle", not(feature = "loom")))]
pub(crate) use shuttle::{sync::atomic::AtomicBool, thread};

#[cfg(feature = "loom")]
pub(crate) use checked::{Mutex, MutexGuard};
#[cfg(feature = "loom")]
use loom::sync as checker;
#[cfg(feature = "loom")]
pub(crate) use loom::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
#[cfg(all(test, feature = "loom"))]
pub(crate) use loom::{sync::atomic::AtomicBool, thread};

/// The model checker's mutex with parking_lot's interface: `lock` hands the guard
/// itself (a poisoned lock is taken as it is, as the runtime's never is poisoned),
/// `try_lock` an `Option`.
#[cfg(any(feature = "shuttle", feature = "loom"))]
mod checked {
    pub(crate) use super::checker::MutexGuard;

    /// A mutex of the model checker.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(super::checker::Mutex<T>);

    impl<T> Mutex<T> {
        /// A mutex holding `value`.
        pub(crate) fn new(value: T) -> Self {
            Self(super::checker::Mutex::new(value))
        }

        /// Takes the lock.
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        }

        /// Takes the lock if it is free.
        #[cfg(test)]
        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock().ok()
        }
    }
}
