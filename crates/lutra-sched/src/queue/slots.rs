//! Per-worker slots, indexed by worker, created on first use and never moved: the
//! table grows in segments (segment `k` holds `2^k` slots), so a lookup is one acquire
//! load and never takes a lock, while `pinned_to(n)` and `set_workers(n)` may name any
//! worker.
//!
//! # Invariants
//! - A slot, once created, stays at the same address until the table is dropped.
//! - `len` is one above the highest index looked up so far; a slot below it that was
//!   never looked up is created by the first `get`, like any other.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Segments: indices up to `2^SEGMENTS - 2`.
const SEGMENTS: usize = usize::BITS as usize - 1;

/// The table of per-worker slots.
pub(crate) struct Slots<S> {
    segments: [OnceLock<Box<[S]>>; SEGMENTS],
    len: AtomicUsize,
}

impl<S: Default> Slots<S> {
    pub(crate) fn new() -> Self {
        Self {
            segments: std::array::from_fn(|_| OnceLock::new()),
            len: AtomicUsize::new(0),
        }
    }

    /// The slot of worker `index`, created (with its segment) if needed.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> &S {
        let position = index + 1;
        let segment = (usize::BITS - 1 - position.leading_zeros()) as usize;
        let offset = position - (1 << segment);
        let slots = self.segments[segment]
            .get_or_init(|| (0..1usize << segment).map(|_| S::default()).collect());
        if self.len.load(Ordering::Relaxed) <= index {
            // ORDERING: AcqRel, paired with the Acquire load in `len`. What `len` counts
            // needs no more: a reader that acts on an index goes through `get`, whose
            // `OnceLock` synchronises the segment on its own, so Relaxed would do.
            self.len.fetch_max(index + 1, Ordering::AcqRel);
        }
        &slots[offset]
    }

    /// One above the highest index looked up so far.
    pub(crate) fn len(&self) -> usize {
        // ORDERING: pairs with the AcqRel `fetch_max` in `get` (see there: stronger than
        // needed).
        self.len.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_keep_their_address_and_count_the_highest_index() {
        let slots: Slots<AtomicUsize> = Slots::new();
        assert_eq!(slots.len(), 0);
        let first = slots.get(0) as *const AtomicUsize;
        for index in 0..100 {
            slots.get(index).store(index, Ordering::Relaxed);
        }
        assert_eq!(slots.len(), 100);
        assert_eq!(slots.get(0) as *const AtomicUsize, first);
        assert!((0..100).all(|index| slots.get(index).load(Ordering::Relaxed) == index));
        slots.get(1000);
        assert_eq!(slots.len(), 1001);
    }
}
