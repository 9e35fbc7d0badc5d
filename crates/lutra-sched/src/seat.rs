//! A worker's seat: what makes a thread worker `i` (Go's P), held by one carrier thread
//! at a time (Go's M), so that a carrier blocked inside a call can lose it to another.
//!
//! A seat is worker `i`'s place in the run queues (its own queue, its private buffer)
//! and a word saying which carrier holds it and what that carrier is doing. The
//! carrier that holds it runs the worker loop (`worker.rs`) for index `i`; a monitor
//! (the Lua runtime's preemption ticker) that sees the holder stuck in one slice
//! without using CPU may *retake* the seat, and hand it to a spare carrier
//! (`carrier.rs`), while the old holder is still inside its slice.
//!
//! # Seat word
//! `counter << 22 | carrier << 2 | tag`: `carrier` is the holder's id (20 bits, see
//! [`carrier_id`]), `counter` counts the holder's slices on this seat.
//!
//! | tag | state | meaning | who moves it out |
//! |-----|-------|---------|------------------|
//! | 0 | `VACANT` | no carrier holds the seat | a starter (`claim`, CAS) to `HELD` |
//! | 1 | `HELD` | a carrier holds it, between slices | the holder: to `IN_SLICE` (`begin_slice`, store), to `VACANT` (`vacate`, store) |
//! | 2 | `IN_SLICE` | the holder runs a slice and touches neither the private buffer nor the queue's owner operations | the holder (`end_slice`, CAS) back to `HELD`; a monitor (`retake`, CAS) to `RETAKEN` |
//! | 3 | `RETAKEN` | the holder lost the seat during its slice; the seat belongs to the monitor that retook it | that monitor's spare carrier (`adopt`, store) to `HELD` |
//!
//! # Invariants
//! - At most one thread may touch the seat's private buffer at a time: the holder
//!   while the word is `HELD` by it; the retaker, then the spare it hands the seat to,
//!   once `RETAKEN`. `IN_SLICE` belongs to no one's buffer access.
//! - A carrier whose `end_slice` fails never touches the seat again: it hands its
//!   slice's task and what the slice made runnable to the shared queues
//!   (`worker.rs`, losing the seat) and goes to the pool.
//! - The counter only grows while a seat is held, so a monitor's `retake(observed)`
//!   succeeds only for the very slice it observed (an equal word is the same holder in
//!   the same slice).
//!
//! # Protocol (hand-off)
//! 1. Holder: `begin_slice` (release store of `IN_SLICE`), run the slice.
//! 2. Monitor: observe `IN_SLICE` of the same holder and counter at two looks with
//!    the holder blocked between them; reserve a spare carrier; `retake` (CAS
//!    `IN_SLICE → RETAKEN`, acquire: the holder's last between-slice writes to its
//!    buffer happen before it).
//! 3. Monitor: hand the seat to the spare (under the pool's lock, `carrier.rs`),
//!    which `adopt`s it and runs the worker loop.
//! 4. Old holder, its slice over: `end_slice` fails (it saw `RETAKEN`); it flushes and
//!    parks in the pool.
//!
//! ORDERING: `begin_slice` is a release store and `end_slice`/`retake` are AcqRel
//! CASes on the same word: whoever wins the word sees every buffer write made before
//! the other's last store. `claim` and `vacate` are SeqCst, paired with the worker
//! count's SeqCst store in `Runtime::set_workers` (a leaving holder and a starter:
//! at least one sees the other, so a seat wanted again never stays vacant).

#[cfg(feature = "shuttle")]
use shuttle::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(feature = "shuttle"))]
use std::sync::atomic::{AtomicU64, Ordering};

use crate::queue::Private;
use std::cell::UnsafeCell;

const TAG_BITS: u32 = 2;
const CARRIER_BITS: u32 = 20;
const COUNTER_SHIFT: u32 = TAG_BITS + CARRIER_BITS;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
const CARRIER_MASK: u64 = ((1 << CARRIER_BITS) - 1) << TAG_BITS;

/// The seat word's tags (see the module's table).
pub(crate) const VACANT: u64 = 0;
pub(crate) const HELD: u64 = 1;
pub(crate) const IN_SLICE: u64 = 2;
pub(crate) const RETAKEN: u64 = 3;

/// A carrier's id as the seat word holds it (20 bits; ids wrap, which only makes a
/// stale observation of a long-gone carrier look like a current one: a retake is
/// then spurious, never unsafe).
pub(crate) fn carrier_id(id: u64) -> u64 {
    (id << TAG_BITS) & CARRIER_MASK
}

/// The tag of `word`.
pub(crate) fn tag(word: u64) -> u64 {
    word & TAG_MASK
}

/// Whether `word` says `carrier` (from [`carrier_id`]) is inside a slice.
pub(crate) fn in_slice_of(word: u64, carrier: u64) -> bool {
    tag(word) == IN_SLICE && word & CARRIER_MASK == carrier
}

/// `word` with its tag replaced by `tag`.
pub(crate) fn with_tag(word: u64, tag: u64) -> u64 {
    (word & !TAG_MASK) | tag
}

/// One worker's seat.
pub(crate) struct Seat {
    word: AtomicU64,
    private: UnsafeCell<Private>,
}

// SAFETY: the private buffer is reached only by the thread the seat word names as its
// owner (module invariants), handed from one owner to the next through the word's
// acquire/release pairs or the pool's lock.
unsafe impl Sync for Seat {}

impl Default for Seat {
    fn default() -> Self {
        Self {
            word: AtomicU64::new(VACANT),
            private: UnsafeCell::new(Private::new()),
        }
    }
}

impl Seat {
    /// Takes a vacant seat for `carrier` (a [`carrier_id`]): the `HELD` word, or
    /// `None` if another carrier holds it.
    pub(crate) fn claim(&self, carrier: u64) -> Option<u64> {
        let word = self.word.load(Ordering::SeqCst);
        if tag(word) != VACANT {
            return None;
        }
        let held = (word & !(TAG_MASK | CARRIER_MASK)) | carrier | HELD;
        // ORDERING: SeqCst, see the module's last paragraph.
        self.word
            .compare_exchange(word, held, Ordering::SeqCst, Ordering::SeqCst)
            .ok()
            .map(|_| held)
    }

    /// The holder leaves the seat (its `held` word).
    pub(crate) fn vacate(&self, held: u64) {
        debug_assert_eq!(tag(held), HELD);
        // ORDERING: SeqCst, see the module's last paragraph.
        self.word.store(with_tag(held, VACANT), Ordering::SeqCst);
    }

    /// The holder (word `held`) starts a slice; returns its `IN_SLICE` word.
    #[inline]
    pub(crate) fn begin_slice(&self, held: u64) -> u64 {
        let word = with_tag(held.wrapping_add(1 << COUNTER_SHIFT), IN_SLICE);
        // ORDERING: release, pairs with `retake`'s acquire (module's ORDERING).
        self.word.store(word, Ordering::Release);
        word
    }

    /// The holder's slice (word `in_slice`) ends: its `HELD` word, or `None` if a
    /// monitor retook the seat meanwhile (the caller must not touch it again).
    #[inline]
    pub(crate) fn end_slice(&self, in_slice: u64) -> Option<u64> {
        let held = with_tag(in_slice, HELD);
        // ORDERING: AcqRel, see the module's ORDERING.
        self.word
            .compare_exchange(in_slice, held, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| held)
    }

    /// The current word (a monitor's observation).
    pub(crate) fn observe(&self) -> u64 {
        self.word.load(Ordering::Acquire)
    }

    /// A monitor retakes the seat if its word is still `observed` (an `IN_SLICE`
    /// word): the slice it saw blocked has not ended. True if it did.
    pub(crate) fn retake(&self, observed: u64) -> bool {
        tag(observed) == IN_SLICE
            && self
                .word
                // ORDERING: AcqRel, see the module's ORDERING.
                .compare_exchange(
                    observed,
                    with_tag(observed, RETAKEN),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
    }

    /// The spare carrier `carrier` takes a retaken seat (word `retaken`); returns its
    /// `HELD` word.
    pub(crate) fn adopt(&self, retaken: u64, carrier: u64) -> u64 {
        debug_assert_eq!(tag(retaken), RETAKEN);
        let held = (retaken & !(TAG_MASK | CARRIER_MASK)) | carrier | HELD;
        // ORDERING: release: the next retake's acquire sees this holder's writes.
        self.word.store(held, Ordering::Release);
        held
    }

    /// The seat's private buffer.
    ///
    /// # Safety
    /// The caller owns the seat (module invariants: its `HELD` word is current, or it
    /// retook or adopted it) and holds no other reference to the buffer.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn private(&self) -> &mut Private {
        // SAFETY: the caller's contract: exclusive access while it owns the seat.
        unsafe { &mut *self.private.get() }
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;

    #[test]
    fn a_slice_word_names_its_holder_and_a_retake_only_that_slice() {
        let seat = Seat::default();
        let held = seat.claim(carrier_id(5)).expect("a new seat is vacant");
        assert!(
            seat.claim(carrier_id(6)).is_none(),
            "a held seat is not claimed"
        );
        let slice = seat.begin_slice(held);
        assert!(in_slice_of(seat.observe(), carrier_id(5)));
        assert!(!in_slice_of(seat.observe(), carrier_id(6)));
        let held = seat.end_slice(slice).expect("not retaken");
        assert!(!seat.retake(slice), "an ended slice");
        let slice = seat.begin_slice(held);
        assert!(seat.retake(seat.observe()));
        assert_eq!(seat.end_slice(slice), None, "the holder lost it");
        let held = seat.adopt(with_tag(slice, RETAKEN), carrier_id(7));
        assert!(in_slice_of(seat.begin_slice(held), carrier_id(7)));
    }
}

/// Model checks of the hand-off on shuttle's scheduler: a holder runs slices,
/// touching the private buffer between them, while a monitor observes and retakes
/// with the real `Seat` code; the spare adopts and touches the buffer. The buffer is
/// a mutex taken with `try_lock`: two owners at once make it fail.
#[cfg(all(test, feature = "shuttle"))]
mod model {
    use super::*;
    use crate::queue::explore::explore;
    use shuttle::sync::Mutex;
    use shuttle::sync::atomic::AtomicBool;
    use shuttle::thread;
    use std::sync::Arc;

    /// Schedules explored per scheduler.
    const ITERATIONS: usize = 2000;

    struct Model {
        seat: Seat,
        buffer: Mutex<u32>,
        lost: AtomicBool,
    }

    fn touch(model: &Model) {
        *model
            .buffer
            .try_lock()
            .expect("two threads own the seat's buffer at once") += 1;
    }

    fn holder(model: &Model, slices: u32) {
        let mut held = model
            .seat
            .claim(carrier_id(1))
            .expect("the seat starts vacant");
        for _ in 0..slices {
            touch(model);
            let word = model.seat.begin_slice(held);
            assert!(
                in_slice_of(word, carrier_id(1)),
                "the slice names its holder"
            );
            thread::yield_now();
            match model.seat.end_slice(word) {
                Some(next) => held = next,
                None => {
                    model.lost.store(true, Ordering::SeqCst);
                    return;
                }
            }
        }
        touch(model);
        model.seat.vacate(held);
    }

    fn monitor(model: &Model) {
        let first = model.seat.observe();
        thread::yield_now();
        let second = model.seat.observe();
        if first != second || !in_slice_of(second, carrier_id(1)) {
            return;
        }
        if model.seat.retake(second) {
            touch(model);
            let held = model.seat.adopt(with_tag(second, RETAKEN), carrier_id(2));
            touch(model);
            let word = model.seat.begin_slice(held);
            assert!(model.seat.end_slice(word).is_some(), "nobody else retakes");
            touch(model);
        }
    }

    #[test]
    fn a_retaken_seat_has_one_owner_at_a_time() {
        explore(7, ITERATIONS, || {
            let model = Arc::new(Model {
                seat: Seat::default(),
                buffer: Mutex::new(0),
                lost: AtomicBool::new(false),
            });
            let other = {
                let model = model.clone();
                thread::spawn(move || monitor(&model))
            };
            holder(&model, 3);
            other.join().unwrap();
            let word = model.seat.observe();
            if model.lost.load(Ordering::SeqCst) {
                assert_eq!(word & CARRIER_MASK, carrier_id(2), "the spare holds it");
            } else {
                assert_eq!(tag(word), VACANT, "the holder kept it to the end");
            }
        });
    }

    #[test]
    fn a_stale_observation_retakes_nothing() {
        explore(11, ITERATIONS, || {
            let seat = Arc::new(Seat::default());
            let held = seat.claim(carrier_id(1)).unwrap();
            let old = seat.begin_slice(held);
            let held = seat.end_slice(old).unwrap();
            let current = seat.begin_slice(held);
            let monitor = {
                let seat = seat.clone();
                thread::spawn(move || seat.retake(old))
            };
            assert!(!monitor.join().unwrap(), "an ended slice was retaken");
            assert!(seat.end_slice(current).is_some());
        });
    }
}
