//! The global lock word: taken by a transaction that falls back (and by every section
//! of the plain, unelided lock), read by every elided transaction before and during its
//! run (seed 000, Fig. 1: `GIL.acquired`, `spin_and_gil_acquire`, `gil_acquire`).
//!
//! # State word
//! | bits | meaning |
//! |------|---------|
//! | `HELD` (1) | a thread holds the lock |
//! | `PARKED` (2) | a waiter may be parked: the releaser wakes every registered waker |
//!
//! # Protocol: acquire (spin, then block)
//! 1. Try to set `HELD` (CAS keeping `PARKED`); spin for `spin_rounds` rounds while it
//!    fails (a pause instruction for the first 64, then yielding the processor).
//! 2. Lock the waiter list, push the own waker, set `PARKED` (`fetch_or`), unlock.
//! 3. If the `fetch_or` found the lock free, go to 1; otherwise park (through the
//!    engine's [`Parking`], so a scheduler's task parks, not its worker) and go to 1.
//!
//! # Protocol: release
//! Swap the word to 0; if `PARKED` was set, drain the waiter list and wake every waker.
//!
//! # Invariants
//! - No lost wake-up: `fetch_or` (step 2) and the releaser's swap are read-modify-writes
//!   of one word, so one sees the other. If the swap comes later it sees `PARKED` and
//!   locks the list after the waiter pushed its waker (the waiter pushed before the
//!   `fetch_or`, holding the list's lock); if it comes first, the `fetch_or` finds the
//!   lock free and the waiter does not park.
//! - A stale waker (left by a waiter that found the lock free, or woke spuriously) only
//!   causes a spurious wake-up.

use lutra_stm::Parking;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Waker;

const HELD: u32 = 1;
const PARKED: u32 = 2;
/// Spin rounds that use a pause instruction before rounds start yielding.
const PAUSE_ROUNDS: u32 = 64;

/// The lock word with its waiter list.
pub(crate) struct LockWord {
    state: crossbeam_utils::CachePadded<AtomicU32>,
    waiters: Mutex<Vec<Waker>>,
    parking: Arc<dyn Parking>,
}

impl LockWord {
    /// A free lock whose waiters block through `parking`.
    pub(crate) fn new(parking: Arc<dyn Parking>) -> Self {
        Self {
            state: crossbeam_utils::CachePadded::new(AtomicU32::new(0)),
            waiters: Mutex::new(Vec::new()),
            parking,
        }
    }

    /// Whether a thread holds the lock.
    #[inline]
    pub(crate) fn is_held(&self) -> bool {
        // ORDERING: pairs with the release swap: a thread that sees the lock free also
        // sees every write the holder made (the STM's commit publishes them anyway).
        self.state.load(Ordering::Acquire) & HELD != 0
    }

    /// Takes the lock if it is free; true on success.
    #[inline]
    pub(crate) fn try_acquire(&self) -> bool {
        let mut state = self.state.load(Ordering::Relaxed);
        while state & HELD == 0 {
            // ORDERING: Acquire pairs with the previous holder's release swap.
            match self.state.compare_exchange_weak(
                state,
                state | HELD,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => state = now,
            }
        }
        false
    }

    /// Takes the lock, spinning `spin_rounds` rounds and then blocking while it is held.
    pub(crate) fn acquire(&self, spin_rounds: u32) {
        loop {
            if self.spin_for(spin_rounds, |lock| lock.try_acquire()) {
                return;
            }
            self.park_while_held_slow();
        }
    }

    /// Spins up to `spin_rounds` rounds while the lock is held; true if it was seen
    /// free (the paper's "spin for a while until the GIL is released").
    pub(crate) fn spin_while_held(&self, spin_rounds: u32) -> bool {
        self.spin_for(spin_rounds, |lock| !lock.is_held())
    }

    /// Releases the lock and wakes parked waiters.
    ///
    /// Must only be called by the holder.
    pub(crate) fn release(&self) {
        // ORDERING: Release publishes the critical section to the next holder (its
        // Acquire CAS) and to readers of `is_held`.
        let old = self.state.swap(0, Ordering::AcqRel);
        debug_assert!(old & HELD != 0, "released a lock that was not held");
        if old & PARKED != 0 {
            self.wake_all_slow();
        }
    }

    fn spin_for(&self, spin_rounds: u32, mut done: impl FnMut(&Self) -> bool) -> bool {
        for round in 0..spin_rounds {
            if done(self) {
                return true;
            }
            if round < PAUSE_ROUNDS {
                std::hint::spin_loop();
            } else {
                self.parking.yield_now();
            }
        }
        done(self)
    }

    /// Protocol steps 2 and 3: registers a waker and parks once if the lock is held.
    #[cold]
    fn park_while_held_slow(&self) {
        let found = {
            let mut waiters = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
            waiters.push(self.parking.waker());
            // ORDERING: a read-modify-write of the word the releaser swaps (see the
            // invariants): one of the two sees the other.
            self.state.fetch_or(PARKED, Ordering::AcqRel)
        };
        if found & HELD != 0 {
            self.parking.park();
        }
    }

    #[cold]
    fn wake_all_slow(&self) {
        let woken =
            std::mem::take(&mut *self.waiters.lock().unwrap_or_else(PoisonError::into_inner));
        woken.into_iter().for_each(Waker::wake);
    }
}

/// Holds the lock until dropped (also on unwind).
pub(crate) struct Held<'l>(&'l LockWord);

impl<'l> Held<'l> {
    /// Takes `lock` (spin, then block).
    pub(crate) fn acquire(lock: &'l LockWord, spin_rounds: u32) -> Self {
        lock.acquire(spin_rounds);
        Self(lock)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lutra_stm::ThreadParking;
    use std::sync::atomic::AtomicU64;

    fn lock() -> LockWord {
        LockWord::new(Arc::new(ThreadParking))
    }

    #[test]
    fn acquire_release_and_spin() {
        let lock = lock();
        assert!(!lock.is_held());
        assert!(lock.try_acquire());
        assert!(!lock.try_acquire());
        assert!(!lock.spin_while_held(3));
        lock.release();
        assert!(lock.spin_while_held(0));
    }

    #[test]
    fn blocked_waiters_are_woken_and_exclude_each_other() {
        let lock = lock();
        let inside = AtomicU64::new(0);
        let total = AtomicU64::new(0);
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    for _ in 0..500 {
                        // Few spin rounds: most contended acquisitions park.
                        let _held = Held::acquire(&lock, 2);
                        assert_eq!(inside.fetch_add(1, Ordering::Relaxed), 0);
                        total.fetch_add(1, Ordering::Relaxed);
                        inside.fetch_sub(1, Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(total.load(Ordering::Relaxed), 4000);
        assert!(!lock.is_held());
    }
}
