//! Deadlock detection by proof: one counter of everything that can still make
//! progress, kept exact by a small wake-up protocol.
//!
//! A deadlock report must never be a guess from timing (a loaded machine can leave a
//! woken process unresumed for seconds). So the runtime keeps [`Liveness::awake`], the
//! number of
//! - live processes that are not parked: running, queued, **or woken and not yet
//!   resumed**;
//! - host threads (module mode) not blocked in a Lutra call, or blocked and woken;
//! - pending timer registrations (each one will wake somebody).
//!
//! Every party that can wake a parked process is one of these, so `awake == 0` with
//! processes alive is proof that nothing can ever wake them. One atomic word is read
//! at once: the look is consistent without a lock.
//!
//! # States of one waiter ([`WakeState`])
//!
//! | state | meaning | counted in `awake` | who moves it out |
//! |-------|---------|--------------------|------------------|
//! | `ACTIVE` | running, queued, or woken since it last parked | yes | the waiter, to `PARKED` when it parks |
//! | `NOTIFIED` | `ACTIVE`, and woken while active: its next park must not sleep | yes | the waiter, to `ACTIVE` when it parks (and it is requeued at once) |
//! | `PARKED` | parked, no wake-up since | no | a waker, to `ACTIVE` by CAS |
//!
//! # Invariants
//! - `awake` is never below the true number of parties that can make progress: every
//!   increment happens before the event it announces (a wake-up, a timer) and every
//!   decrement after the last action it ends (a park comes after the registrations, a
//!   timer's share goes after its wake-up, a finishing process's after its wake-ups).
//!   It may be above it for a moment (a waker's token, below), never for long.
//! - The scheduler's own wake-up (the inner [`Waker`]) is called only on the
//!   `PARKED → ACTIVE` transition, or by the waiter itself when it parks `NOTIFIED`; so
//!   the scheduler's `notified` flag is never left set by a wake-up this protocol
//!   counted as spent.
//!
//! # Protocol
//! Waker ([`WakeState::wake`]): 1. add a token to `awake`; 2. CAS the state: `PARKED →
//! ACTIVE` (the token becomes the waiter's share; call the inner waker), `ACTIVE →
//! NOTIFIED` (remove the token), `NOTIFIED` (remove the token).
//! Waiter parking ([`WakeState::park`], after its registrations): CAS `ACTIVE → PARKED`
//! and remove its share; or find `NOTIFIED`, store `ACTIVE` and wake itself through the
//! inner waker (its park then returns at once).
//! Waiter resumed after a park ([`WakeState::resumed`]): a `PARKED` state here means an
//! uncounted wake-up resumed it (none exists in Lutra; counted anyway).

use crate::sync::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Wake, Waker};

const ACTIVE: u8 = 0;
const NOTIFIED: u8 = 1;
const PARKED: u8 = 2;

/// The runtime's count of parties that can still make progress (module header).
#[derive(Debug, Default)]
pub(crate) struct Liveness {
    awake: AtomicUsize,
}

impl Liveness {
    /// One more party that can make progress (a process spawned, a timer registered,
    /// a host opened).
    pub(crate) fn add(&self) {
        // ORDERING: SeqCst on every access of `awake`: one total order, in which each
        // increment precedes the event it announces (module invariants).
        self.awake.fetch_add(1, Ordering::SeqCst);
    }

    /// One party less (a process finished, a timer fired, a host closed).
    pub(crate) fn remove(&self) {
        // ORDERING: SeqCst: one total order over `awake` and every waiter's `state`, in
        // which the module's invariants are argued (each increment before the event it
        // announces, each decrement after the last action it ends).
        let before = self.awake.fetch_sub(1, Ordering::SeqCst);
        debug_assert!(before > 0, "liveness count went below zero");
    }

    /// Whether nothing can make progress any more: every process and host parked with
    /// no wake-up pending, and no timer pending.
    pub(crate) fn nothing_awake(&self) -> bool {
        // ORDERING: SeqCst: one total order over `awake` and every waiter's `state`, in
        // which the module's invariants are argued (each increment before the event it
        // announces, each decrement after the last action it ends). The loom check in
        // `model` passes with every access Relaxed: what it covers rests on each word's
        // modification order alone.
        self.awake.load(Ordering::SeqCst) == 0
    }
}

/// One waiter's place in the protocol: a process, or a host thread.
pub(crate) struct WakeState {
    state: AtomicU8,
    /// Wakes the waiter in the scheduler (its task) or the OS (its thread).
    inner: Waker,
    liveness: Arc<Liveness>,
}

impl WakeState {
    /// A waiter that is `ACTIVE` and already counted in `liveness`, woken through
    /// `inner`.
    pub(crate) fn new(liveness: Arc<Liveness>, inner: Waker) -> Arc<Self> {
        Arc::new(Self {
            state: AtomicU8::new(ACTIVE),
            inner,
            liveness,
        })
    }

    /// A waker that wakes this waiter through the protocol.
    pub(crate) fn waker(self: &Arc<Self>) -> Waker {
        Waker::from(self.clone())
    }

    /// The waiter is about to park (its registrations are made). Returns `false` when
    /// a wake-up came while it was active: it stays counted, and its park returns at
    /// once (the inner waker was called).
    pub(crate) fn park(&self) -> bool {
        match self
            .state
            // ORDERING: the waiter's park: its share is removed after the CAS, in the total
            // order the module's invariants use (see `Liveness::add`).
            .compare_exchange(ACTIVE, PARKED, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => {
                self.liveness.remove();
                true
            }
            Err(_) => {
                // NOTIFIED: only the waiter itself leaves this state.
                // ORDERING: only the waiter leaves `NOTIFIED`, and it read `NOTIFIED` just
                // now: this store follows the waker's CAS in `state`'s order; SeqCst as
                // every access of `state`.
                self.state.store(ACTIVE, Ordering::SeqCst);
                self.inner.wake_by_ref();
                false
            }
        }
    }

    /// The waiter runs again after a park.
    pub(crate) fn resumed(&self) {
        // ORDERING: pairs with a waker's CAS `PARKED → ACTIVE`, which came before the
        // scheduler resumed the waiter (the run queue orders it): a counted wake-up is seen
        // as `ACTIVE`.
        if self.state.load(Ordering::SeqCst) == PARKED {
            self.resumed_uncounted_slow();
        }
    }

    #[cold]
    fn resumed_uncounted_slow(&self) {
        self.liveness.add();
        if self
            .state
            // ORDERING: after the `add` above, in the total order of the module: a counted
            // wake-up racing this one wins the CAS or finds `ACTIVE`.
            .compare_exchange(PARKED, ACTIVE, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            // A counted wake-up came in between and took the share itself.
            self.liveness.remove();
        }
    }

    fn wake_counted(&self) {
        self.liveness.add();
        // ORDERING: the waker's step 1 (`add`) comes before this load and the CAS below in
        // the total order: the token is counted before the state can say `ACTIVE`.
        let mut state = self.state.load(Ordering::SeqCst);
        loop {
            let next = match state {
                PARKED => ACTIVE,
                ACTIVE => NOTIFIED,
                _ => break,
            };
            match self
                .state
                // ORDERING: the waker's step 2, after its token (see the load above).
                .compare_exchange(state, next, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => break,
                Err(now) => state = now,
            }
        }
        if state == PARKED {
            // The token is now the waiter's share.
            self.inner.wake_by_ref();
        } else {
            self.liveness.remove();
        }
    }
}

impl Wake for WakeState {
    fn wake(self: Arc<Self>) {
        self.wake_counted();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wake_counted();
    }
}

#[cfg(all(test, not(any(feature = "shuttle", feature = "loom"))))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Counts the inner wake-ups.
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            // ORDERING: a test's counter, read after the wake-ups on this thread; SeqCst as
            // the simplest choice.
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn waiter() -> (Arc<Liveness>, Arc<WakeState>, Arc<Count>) {
        let liveness = Arc::new(Liveness::default());
        let count = Arc::new(Count(AtomicUsize::new(0)));
        liveness.add();
        let state = WakeState::new(liveness.clone(), Waker::from(count.clone()));
        (liveness, state, count)
    }

    #[test]
    fn woken_and_not_resumed_counts_as_awake() {
        let (liveness, state, count) = waiter();
        assert!(state.park());
        assert!(liveness.nothing_awake());
        state.waker().wake();
        assert!(
            !liveness.nothing_awake(),
            "a woken waiter is awake until it parks"
        );
        // ORDERING: the test's own thread made every wake-up: any ordering would do.
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        state.resumed();
        assert!(state.park());
        assert!(liveness.nothing_awake());
    }

    #[test]
    fn a_wake_while_active_cancels_the_next_park() {
        let (liveness, state, count) = waiter();
        state.waker().wake();
        state.waker().wake();
        assert_eq!(
            // ORDERING: as above.
            count.0.load(Ordering::SeqCst),
            0,
            "no scheduler wake while active"
        );
        assert!(!state.park(), "the park after a wake-up returns at once");
        // ORDERING: as above.
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(!liveness.nothing_awake());
        state.resumed();
        assert!(state.park());
        assert!(liveness.nothing_awake());
    }

    /// Many wakers against one waiter that parks and resumes: the count ends exact,
    /// and while the waiter is parked with no wake-up pending it reads zero.
    #[test]
    fn concurrent_wakers_keep_the_count_exact() {
        let (liveness, state, _count) = waiter();
        std::thread::scope(|scope| {
            for _ in 0..8 {
                let waker = state.waker();
                scope.spawn(move || {
                    for _ in 0..2_000 {
                        waker.wake_by_ref();
                        std::thread::yield_now();
                    }
                });
            }
            for _ in 0..2_000 {
                if state.park() {
                    state.resumed();
                }
            }
        });
        // Only the waiter's own share may remain; whatever the last wake-up left,
        // one more park settles it.
        if !state.park() {
            assert!(state.park());
        }
        assert!(liveness.nothing_awake());
    }
}

/// Model checks of the protocol on shuttle's scheduler (every atomic access of
/// `Liveness` and `WakeState` is a scheduling point) and on loom (`sync.rs`): a waiter that parks and is
/// resumed as lutra-sched resumes a task, a process that wakes it and then finishes,
/// and a look at the count from a third thread.
#[cfg(all(test, any(feature = "shuttle", feature = "loom")))]
mod model {
    use super::*;
    use crate::sync::{AtomicBool, thread};

    /// The scheduler's side of one task (lutra-sched's `notified` flag): the inner
    /// waker sets it; a task parked by the worker runs again once it is set, and the
    /// next slice clears it.
    struct Sched {
        notified: AtomicBool,
    }

    impl Wake for Sched {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &Arc<Self>) {
            // A swap, not a store: loom 0.7 may order a plain store before another
            // thread's read-modify-write that it has not seen (the waiter's `swap`
            // below) although that RMW read the value before it, losing the wake-up
            // in executions no machine has (loom issues 254 and 389; lutra-stm's
            // `sync.rs` works around the same gap). A swap reads the latest value, so
            // loom orders it after every RMW it follows.
            // ORDERING: SeqCst as lutra-sched's `notified` (the scheduler's park/unpark
            // protocol, task.rs).
            self.notified.swap(true, Ordering::SeqCst);
        }
    }

    /// Soundness: whenever the count reads zero, no wake-up is pending and none ever
    /// comes (the waker has finished). Completeness: a waiter parked with nothing
    /// pending once the waker finished reads as zero (no share leaks).
    fn waiter_waker_and_look(wakes: usize, parks: usize) {
        let liveness = Arc::new(Liveness::default());
        liveness.add(); // the waiter, a process since its spawn
        liveness.add(); // the waker, a process that can still act
        let sched = Arc::new(Sched {
            notified: AtomicBool::new(false),
        });
        let state = WakeState::new(liveness.clone(), Waker::from(sched.clone()));
        let waker_done = Arc::new(AtomicBool::new(false));
        let waker = {
            let (waker, liveness, done) = (state.waker(), liveness.clone(), waker_done.clone());
            thread::spawn(move || {
                for _ in 0..wakes {
                    waker.wake_by_ref();
                }
                liveness.remove(); // the waking process finishes
                // ORDERING: after the waker's last `remove`: pairs with the loads of `done`
                // below.
                done.store(true, Ordering::SeqCst);
            })
        };
        let look = {
            let (liveness, sched, done) = (liveness.clone(), sched.clone(), waker_done.clone());
            thread::spawn(move || {
                if liveness.nothing_awake() {
                    // Proof: from here on nothing moves.
                    assert!(
                        // ORDERING: read after seeing zero: a wake-up counted before that
                        // zero set `notified` first.
                        !sched.notified.load(Ordering::SeqCst),
                        "zero with a wake-up pending"
                    );
                    // ORDERING: a scheduling point between the two looks (its value is not
                    // needed).
                    let _ = done.load(Ordering::SeqCst);
                    assert!(liveness.nothing_awake(), "zero, then somebody woke");
                }
            })
        };
        for _ in 0..parks {
            state.park(); // the slice ended in Park (either way, `was_parked`)
            // The worker: the task runs again once notified.
            loop {
                // ORDERING: the worker consumes the wake-up, as lutra-sched's worker does
                // (SeqCst, task.rs).
                if sched.notified.swap(false, Ordering::SeqCst) {
                    break;
                }
                if liveness.nothing_awake() {
                    waker.join().unwrap();
                    look.join().unwrap();
                    // ORDERING: after joining the waker: every wake-up is visible.
                    assert!(!sched.notified.load(Ordering::SeqCst), "woken after zero");
                    return;
                }
                // ORDERING: pairs with the waker's store of `done`, made after its wake-ups
                // and its `remove`: those are all visible once `done` reads true.
                if waker_done.load(Ordering::SeqCst) && !sched.notified.load(Ordering::SeqCst) {
                    assert!(
                        liveness.nothing_awake(),
                        "a share leaked: parked, nothing pending"
                    );
                }
                thread::yield_now();
            }
            state.resumed();
        }
        waker.join().unwrap();
        look.join().unwrap();
    }

    #[cfg(all(feature = "shuttle", not(feature = "loom")))]
    #[test]
    fn one_wake_two_parks() {
        shuttle::check_random(|| waiter_waker_and_look(1, 2), 20_000);
    }

    #[cfg(all(feature = "shuttle", not(feature = "loom")))]
    #[test]
    fn two_wakes_three_parks() {
        shuttle::check_pct(|| waiter_waker_and_look(2, 3), 20_000, 3);
    }

    /// Every interleaving of the smallest case, up to 20,000 schedules (an
    /// execution whose waiter spins past 400 steps, an unfair schedule, is cut off).
    #[cfg(all(feature = "shuttle", not(feature = "loom")))]
    #[test]
    fn depth_first_small() {
        let mut config = shuttle::Config::new();
        config.max_steps = shuttle::MaxSteps::ContinueAfter(400);
        shuttle::Runner::new(
            shuttle::scheduler::DfsScheduler::new(Some(20_000), false),
            config,
        )
        .run(|| waiter_waker_and_look(1, 2));
    }

    /// The smallest case under loom, which also lets each load return any store the
    /// memory model allows for its `Ordering` (at up to 3 preemptions: about a second
    /// in a release build). Guards the waiter's park step for a wake-up that came
    /// while it was active: it finds `NOTIFIED`, stays counted and wakes itself
    /// through the inner waker (`WakeState::park`). Checked once by deleting that
    /// wake-up: loom finds the execution in which the waiter waits for ever, counted,
    /// with nothing pending ("a share leaked"). (The same check passes with every
    /// ordering of `Liveness` and `WakeState` made `Relaxed`: in this model each
    /// decision rests on one atomic's modification order.)
    #[cfg(feature = "loom")]
    #[test]
    fn one_wake_two_parks_under_weak_memory() {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(3);
        builder.check(|| waiter_waker_and_look(1, 2));
    }
}
