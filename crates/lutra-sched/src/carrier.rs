//! Carrier threads and the pool of spare ones (Go's Ms and their idle list): a carrier
//! is an OS thread that holds a worker's seat (`seat.rs`) and runs its loop
//! (`worker.rs`). The runtime starts one per worker; a monitor that sees a carrier
//! blocked inside one call retakes its seat ([`Carrier::retake`]) and hands it to a
//! spare carrier: one parked in the pool, or a new one if the bound allows. The
//! blocked carrier, once its call returns and its slice ends, finds it lost the seat,
//! hands its task back to the run queues and parks in the pool.
//!
//! A task pinned to a worker (`TaskBuilder::pinned_to`) stays on that worker's
//! seat, but after a retake the seat runs on another thread: a runtime whose monitor
//! retakes seats (the Lua runtime's preemption ticker) must not rely on a pinned task
//! keeping its OS thread. The Lua runtime pins no task; the C API's runtime has no
//! monitor.
//!
//! # Invariants
//! - `alive` counts carrier threads started and not exited; a spare is started only
//!   while `alive` is below the worker count plus `max_spares`, so at most
//!   `max_spares` threads exist beyond the workers (the pool's bound). None is started
//!   while no seat is retaken: a run where nothing blocks has the workers' threads
//!   only.
//! - `parked` counts carriers waiting in the pool; `offers` holds retaken seats not
//!   yet adopted, never more than `parked` (a retake that offers a seat counts on a
//!   parked carrier, under the lock, before it retakes), except after the OS refused
//!   a spare thread: that seat waits in `offers` for the carrier it was retaken from,
//!   which parks once its slice ends. So a retaken seat is always adopted.
//! - A carrier's `seat` is the index of the seat it holds or last held in a slice, or
//!   [`NO_SEAT`]; only the carrier writes it.
//!
//! # Protocol (retake, under the pool's lock)
//! 1. Refuse after shutdown, or when no carrier is parked beyond the pending offers
//!    and the bound is reached (the seat stays with its blocked holder, as without
//!    hand-offs).
//! 2. CAS the seat word from the observed slice to `RETAKEN` (`Seat::retake`);
//!    refuse if the slice ended meanwhile.
//! 3. Offer the seat to a parked carrier (notify one), or start a new carrier with it.
//!    The carrier adopts the seat and runs the worker loop for its index.

use crate::seat::{Seat, carrier_id};
use crate::shared::Shared;
use crate::worker;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread;

/// `CarrierRecord::seat` of a carrier that holds no seat.
pub(crate) const NO_SEAT: usize = usize::MAX;

/// Default bound on the threads started beyond the workers for blocked calls.
pub const DEFAULT_MAX_BLOCKING_THREADS: usize = 128;

/// A carrier thread, as the monitor and the worker loop see it.
pub(crate) struct CarrierRecord {
    /// Its id as the seat word holds it (`seat::carrier_id`).
    pub(crate) id: u64,
    /// The seat it holds, or [`NO_SEAT`].
    pub(crate) seat: AtomicUsize,
}

impl CarrierRecord {
    /// A new carrier's record, holding no seat yet.
    pub(crate) fn new(shared: &Shared) -> Arc<Self> {
        Arc::new(Self {
            id: carrier_id(shared.next_carrier.fetch_add(1, Ordering::Relaxed)),
            seat: AtomicUsize::new(NO_SEAT),
        })
    }
}

/// How a carrier left a seat's loop (`worker.rs`).
pub(crate) enum Left {
    /// The runtime stopped or no longer wants this seat: the carrier exits.
    Stopped,
    /// A monitor retook the seat during the carrier's slice: it parks in the pool.
    Retaken,
}

/// A seat a carrier is to run: `(index, word)`, the word `HELD` (a claimed seat) or
/// `RETAKEN` (a seat to adopt).
type Seating = (usize, u64);

/// The pool's counts and offers (see the module's invariants).
#[derive(Default)]
struct PoolState {
    alive: usize,
    parked: usize,
    offers: VecDeque<Seating>,
    shutdown: bool,
}

/// The spare carriers.
pub(crate) struct Pool {
    state: Mutex<PoolState>,
    offered: Condvar,
    max_spares: usize,
    /// Seats retaken so far.
    pub(crate) retakes: AtomicU64,
    /// Spare carriers started so far.
    pub(crate) spares_started: AtomicU64,
}

impl Pool {
    pub(crate) fn new(max_spares: usize) -> Self {
        Self {
            state: Mutex::new(PoolState::default()),
            offered: Condvar::new(),
            max_spares,
            retakes: AtomicU64::new(0),
            spares_started: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Carriers parked in the pool now.
    pub(crate) fn parked(&self) -> usize {
        self.lock().parked
    }

    /// Wakes every parked carrier to exit (shutdown).
    pub(crate) fn shut_down(&self) {
        self.lock().shutdown = true;
        self.offered.notify_all();
    }

    /// Parks the calling carrier until a seat is offered (`Some`) or the runtime
    /// shuts down (`None`).
    fn park(&self) -> Option<Seating> {
        let mut state = self.lock();
        state.parked += 1;
        loop {
            if let Some(offer) = state.offers.pop_front() {
                state.parked -= 1;
                return Some(offer);
            }
            if state.shutdown {
                state.parked -= 1;
                return None;
            }
            state = self
                .offered
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// The module's protocol, for seat `index` observed in slice `observed`.
    fn retake(&self, shared: &Arc<Shared>, index: usize, observed: u64) -> bool {
        let mut state = self.lock();
        if state.shutdown || shared.shutdown.load(Ordering::SeqCst) {
            return false;
        }
        let spare_parked = state.parked > state.offers.len();
        let bound = shared.target.load(Ordering::SeqCst) + self.max_spares;
        if !spare_parked && state.alive >= bound {
            return false;
        }
        if !shared.seat(index).retake(observed) {
            return false;
        }
        self.retakes.fetch_add(1, Ordering::Relaxed);
        let retaken = crate::seat::with_tag(observed, crate::seat::RETAKEN);
        if spare_parked {
            state.offers.push_back((index, retaken));
            drop(state);
            self.offered.notify_one();
        } else {
            if start_spare_locked(shared, &mut state, (index, retaken)) {
                self.spares_started.fetch_add(1, Ordering::Relaxed);
            }
        }
        true
    }
}

/// Starts a carrier for a seat that no carrier holds (`set_workers`, `build`): claims
/// it, then starts the thread; does nothing if another carrier holds it.
///
/// # Panics
/// When the OS refuses to start the thread.
pub(crate) fn start_for_vacant(shared: &Arc<Shared>, index: usize) {
    let record = CarrierRecord::new(shared);
    let Some(held) = shared.seat(index).claim(record.id) else {
        return;
    };
    let mut state = shared.pool.lock();
    start_locked(shared, &mut state, record, (index, held));
}

/// Starts a carrier thread with `seating`, counting it in `alive`.
///
/// # Panics
/// When the OS refuses to start the thread (at start-up and when the worker count
/// grows: the runtime cannot run without it); see [`start_spare_locked`] for spares.
fn start_locked(
    shared: &Arc<Shared>,
    state: &mut PoolState,
    record: Arc<CarrierRecord>,
    seating: Seating,
) {
    try_start_locked(shared, state, record, seating)
        .expect("the OS refused to start a worker thread");
}

/// Starts a spare carrier for a retaken seat. If the OS refuses the thread, the seat
/// is offered to the pool instead: the carrier it was retaken from parks there once
/// its slice ends, and takes it back (the hand-off then only cost the wait). True if
/// a thread was started.
fn start_spare_locked(shared: &Arc<Shared>, state: &mut PoolState, seating: Seating) -> bool {
    let started = try_start_locked(shared, state, CarrierRecord::new(shared), seating).is_ok();
    if !started {
        state.offers.push_back(seating);
    }
    started
}

/// Starts a carrier thread with `seating`, counting it in `alive`; the OS's refusal.
fn try_start_locked(
    shared: &Arc<Shared>,
    state: &mut PoolState,
    record: Arc<CarrierRecord>,
    seating: Seating,
) -> std::io::Result<()> {
    let runner = shared.clone();
    let handle = thread::Builder::new()
        .name(format!("lutra-worker-{}", seating.0))
        .spawn(move || run(runner, record, seating))?;
    state.alive += 1;
    shared
        .threads
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .push((seating.0, handle));
    Ok(())
}

/// Body of a carrier thread: run the seat it was given, then any seat the pool offers
/// it, until it is told to stop.
fn run(shared: Arc<Shared>, record: Arc<CarrierRecord>, first: Seating) {
    crate::overflow::ensure_alternate_stack();
    let mut seating = Some(first);
    while let Some((index, word)) = seating {
        let seat = shared.seat(index);
        let held = if crate::seat::tag(word) == crate::seat::RETAKEN {
            seat.adopt(word, record.id)
        } else {
            word
        };
        pin(&shared, index);
        record.seat.store(index, Ordering::Release);
        let left = worker::run(&shared, &record, index, held);
        record.seat.store(NO_SEAT, Ordering::Release);
        seating = match left {
            Left::Stopped => None,
            Left::Retaken => shared.pool.park(),
        };
    }
    shared.pool.lock().alive -= 1;
}

/// Pins the calling carrier to seat `index`'s core, if the runtime pins.
fn pin(shared: &Shared, index: usize) {
    if shared.pin && !shared.cores.is_empty() {
        core_affinity::set_for_current(shared.cores[index % shared.cores.len()]);
    }
}

/// A carrier thread as a monitor sees it: obtained by the carrier itself
/// ([`current_carrier`]), then read from any thread to find it blocked and retake its
/// seat. Holds its runtime weakly: once the runtime is gone, it observes nothing.
#[derive(Clone)]
pub struct Carrier {
    record: Arc<CarrierRecord>,
    shared: Weak<Shared>,
}

/// What [`Carrier::observe`] saw: the carrier inside one slice on one seat. Two equal
/// observations at two times are the same slice, still running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observed {
    seat: usize,
    word: u64,
}

impl Carrier {
    /// The slice the carrier runs now, or `None` if it runs none (between slices,
    /// parked, without a seat, or its runtime is gone). Any thread, any time.
    pub fn observe(&self) -> Option<Observed> {
        let seat = self.record.seat.load(Ordering::Acquire);
        if seat == NO_SEAT {
            return None;
        }
        let shared = self.shared.upgrade()?;
        let word = shared.seat(seat).observe();
        crate::seat::in_slice_of(word, self.record.id).then_some(Observed { seat, word })
    }

    /// Retakes the seat of the carrier if it is still inside the slice `observed`, and
    /// hands the seat to a spare carrier, so that the worker's other tasks run while
    /// this carrier stays blocked; the carrier, when its slice ends, gives its task
    /// back to the run queue and joins the pool. The caller must have seen the carrier
    /// blocked (not using CPU) in that slice: a retaken carrier still running a task
    /// keeps running it, beside the spare, until the task's slice ends.
    ///
    /// Returns false (doing nothing) if the slice ended, the runtime shuts down, or
    /// the pool is at its bound (`Builder::max_blocking_threads`) with no spare parked.
    pub fn retake(&self, observed: Observed) -> bool {
        let Some(shared) = self.shared.upgrade() else {
            return false;
        };
        shared.pool.retake(&shared, observed.seat, observed.word)
    }
}

/// The carrier running the current thread, if it is a worker of a runtime.
pub fn current_carrier() -> Option<Carrier> {
    crate::context::with_worker(|worker| {
        worker.map(|worker| Carrier {
            record: worker.carrier().clone(),
            shared: Arc::downgrade(worker.shared()),
        })
    })
}

impl Shared {
    /// Worker `index`'s seat.
    pub(crate) fn seat(&self, index: usize) -> &Seat {
        self.seats.get(index)
    }
}
