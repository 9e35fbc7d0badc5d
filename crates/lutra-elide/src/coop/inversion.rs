//! Counting priority inversions decided by a contention manager (seed 003, Section
//! 6): a wrapper around any manager that records, for every conflict it decides,
//! whether the transaction with the higher priority lost.
//!
//! # Who loses a decision
//! | resolution | loser |
//! |------------|-------|
//! | `AbortSelf` | the asking transaction (it restarts) |
//! | `Wait` | the asking transaction (it waits for the holder: a lock-style inversion) |
//! | `KillOther` | the holder (it is doomed) |
//!
//! A decision between equal priorities cannot invert anything; it is counted apart.
//! Conflicts that never reach the manager (an irrevocable side always wins; with
//! invisible reads, a reader overtaken by a writer fails validation) are not seen
//! here: see `escalate.rs` for the latter.
//!
//! # Invariants
//! - The wrapped manager's answer is returned unchanged: counting never alters a
//!   decision.

use lutra_stm::cm::{ContentionManager, Resolution, TxView};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Decisions counted by a [`CountingManager`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Decisions {
    /// Every conflict the manager decided.
    pub decided: u64,
    /// Decisions between transactions of different priorities.
    pub mixed: u64,
    /// Mixed decisions that the higher-priority transaction lost.
    pub inversions: u64,
}

impl Decisions {
    /// `inversions ÷ decided` (0 without decisions).
    pub fn inversion_rate(&self) -> f64 {
        if self.decided == 0 {
            0.0
        } else {
            self.inversions as f64 / self.decided as f64
        }
    }
}

/// A contention manager that decides as the one it wraps and counts inversions.
///
/// ```
/// use lutra_elide::coop::CountingManager;
/// use lutra_stm::cm::{ContentionManager, SizeMatters, TxView};
/// let counting = CountingManager::new(std::sync::Arc::new(SizeMatters));
/// let high_small = TxView { priority: 5, size: 1, age: 1, slot: 0 };
/// let low_large = TxView { priority: 0, size: 9, age: 2, slot: 1 };
/// counting.resolve(&high_small, &low_large); // SizeMatters: the larger wins
/// assert_eq!(counting.decisions().inversions, 1);
/// ```
#[derive(Debug)]
pub struct CountingManager {
    inner: Arc<dyn ContentionManager>,
    decided: AtomicU64,
    mixed: AtomicU64,
    inversions: AtomicU64,
}

impl CountingManager {
    /// Wraps `inner` (for example [`lutra_stm::cm::by_name`]'s answer).
    pub fn new(inner: Arc<dyn ContentionManager>) -> Self {
        Self {
            inner,
            decided: AtomicU64::new(0),
            mixed: AtomicU64::new(0),
            inversions: AtomicU64::new(0),
        }
    }

    /// The counts so far. Any time (a snapshot while transactions run).
    pub fn decisions(&self) -> Decisions {
        Decisions {
            decided: self.decided.load(Ordering::Relaxed),
            mixed: self.mixed.load(Ordering::Relaxed),
            inversions: self.inversions.load(Ordering::Relaxed),
        }
    }

    fn count(&self, me: &TxView, other: &TxView, resolution: Resolution) {
        // ORDERING: independent counters, read after the run; Relaxed suffices.
        self.decided.fetch_add(1, Ordering::Relaxed);
        if me.priority == other.priority {
            return;
        }
        self.mixed.fetch_add(1, Ordering::Relaxed);
        let (loser, winner) = match resolution {
            Resolution::KillOther => (other, me),
            Resolution::AbortSelf | Resolution::Wait => (me, other),
        };
        if loser.priority > winner.priority {
            self.inversions.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl ContentionManager for CountingManager {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn resolve(&self, me: &TxView, other: &TxView) -> Resolution {
        let resolution = self.inner.resolve(me, other);
        self.count(me, other, resolution);
        resolution
    }

    fn restart_delay(&self, attempts: u32) -> std::time::Duration {
        self.inner.restart_delay(attempts)
    }
}
