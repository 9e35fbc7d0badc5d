//! ATS, adaptive transaction scheduling (Yoo and Lee, as evaluated in seed 004
//! Section 4): each agent keeps a contention intensity (see `intensity.rs`); an attempt
//! that starts while its agent's CI is above the threshold goes through one global
//! FIFO queue, which lets one such attempt run at a time. Attempts of agents below the
//! threshold never touch the queue and run in parallel with everything.
//!
//! # Why a queue, not `Decision::Serialize`
//! `Serialize` runs the attempt irrevocable: alone among *all* updaters (low-CI
//! transactions could not commit meanwhile) and unable to abort. ATS serialises only
//! the high-CI transactions among themselves, in FIFO order, and a queued attempt can
//! still abort against a low-CI one (and its CI rises further). So the queue is the
//! faithful reading; the engine's `on_attempt_end` guarantees it is always released.
//!
//! # Queue state
//!
//! | `holder` | `waiters` | meaning |
//! |----------|-----------|---------|
//! | `None` | empty | free: the next high-CI start takes it at once |
//! | `Some(slot)` | any | the attempt of descriptor `slot` runs serialised; the waiters are parked in FIFO order |
//!
//! # Protocol
//! 1. `on_start`: if the transaction runs irrevocable, proceed (it is alone among
//!    updaters already, cannot abort, and may hold the commit gate, which a queued
//!    holder could be waiting for). If the agent's CI ≤ 0.5, proceed.
//! 2. Otherwise take the queue: free → hold it; taken → append `(slot, waker)` and park
//!    the task (never spin a worker) until a release hands the queue to this slot.
//! 3. `on_attempt_end` (every end: commit, abort, `retry`, panic): evaluate CI; if this
//!    slot holds the queue, hand it to the first waiter (or free it) and wake that
//!    waiter.
//!
//! # Invariants
//! - The queue is held only between a start hook and the end of that attempt, so a
//!   holder never waits for the queue, and a parked `retry` holds nothing.
//! - Hand-off is direct (the releaser names the next holder): no barging, FIFO order.
//! - `held` mirrors `holder` (slot + 1, 0 when free) and changes only under the lock:
//!   an ending attempt reads it without the lock, since only its own start could have
//!   made it the holder (so that read is ordered after the write by that start).

use super::agents::current_agent;
use super::intensity::{CI_THRESHOLD, Intensities};
use crate::{current_waker, park};
use lutra_stm::{Decision, TxEvent, TxHooks};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::task::Waker;

struct Queue {
    holder: Option<usize>,
    waiters: VecDeque<(usize, Waker)>,
}

/// Hooks of the ATS policy (α = 0.75, threshold 0.5, one global queue).
pub struct Ats {
    intensity: Intensities,
    queue: Mutex<Queue>,
    held: AtomicUsize,
}

impl Default for Ats {
    fn default() -> Self {
        Self::new()
    }
}

impl Ats {
    /// A policy with every CI at 0 and the queue free.
    pub fn new() -> Self {
        Self {
            intensity: Intensities::new(),
            queue: Mutex::new(Queue {
                holder: None,
                waiters: VecDeque::new(),
            }),
            held: AtomicUsize::new(0),
        }
    }

    /// The contention intensity of the calling task (or thread).
    pub fn intensity(&self) -> f64 {
        self.intensity.get(current_agent())
    }

    /// The descriptor slot whose attempt holds the queue, if any.
    pub fn holder(&self) -> Option<usize> {
        self.lock().holder
    }

    /// How many attempts wait for the queue.
    pub fn waiting(&self) -> usize {
        self.lock().waiters.len()
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Step 2: returns once `slot` holds the queue.
    #[cold]
    fn enter_slow(&self, slot: usize) {
        {
            let mut queue = self.lock();
            if queue.holder == Some(slot) {
                return;
            }
            if queue.holder.is_none() && queue.waiters.is_empty() {
                self.hand_to(&mut queue, Some(slot));
                return;
            }
            queue.waiters.push_back((slot, current_waker()));
        }
        while self.lock().holder != Some(slot) {
            park();
        }
    }

    fn hand_to(&self, queue: &mut Queue, slot: Option<usize>) {
        queue.holder = slot;
        self.held
            .store(slot.map_or(0, |slot| slot + 1), Ordering::Relaxed);
    }

    /// Step 3: hands the queue on if `slot` holds it.
    fn leave(&self, slot: usize) {
        // ORDERING: relaxed: see the `held` invariant (the store that made `slot` the
        // holder happened under the lock this slot's start took afterwards).
        if self.held.load(Ordering::Relaxed) != slot + 1 {
            return;
        }
        let mut queue = self.lock();
        let next = queue.waiters.pop_front();
        self.hand_to(&mut queue, next.as_ref().map(|(slot, _)| *slot));
        drop(queue);
        if let Some((_, waker)) = next {
            waker.wake();
        }
    }
}

impl TxHooks for Ats {
    fn on_start(&self, event: &TxEvent) -> Decision {
        if !event.irrevocable && self.intensity.get(current_agent()) > CI_THRESHOLD {
            self.enter_slow(event.slot);
        }
        Decision::Proceed
    }

    fn on_attempt_end(&self, event: &TxEvent) {
        self.intensity.record(current_agent(), event);
        self.leave(event.slot);
    }
}
