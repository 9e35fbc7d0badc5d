//! A task woken from outside the workers (a timer's thread, a host) runs within a
//! few slice ends of its wake-up, whatever the tasks already running do: they keep
//! the one worker busy, and every slice of theirs is counted. The busy tasks either
//! yield (each slice ends in a yield) or form two chains of tasks that each spawn
//! their successor and finish (each slice ends in a finish, and the worker picks
//! its next task from its queue): the two ways a worker looks for its next task.
//! The bound is in slices, not in time (see `worker.rs`, prompt wake-ups).
//!
//! # Protocol (one round)
//! 1. The woken task hands the test its waker and parks; the yielding tasks count
//!    their slices (which, on one worker, run only once it has parked).
//! 2. The test holds the count (the yielding tasks go on yielding, uncounted), wakes
//!    the task, reads the count and releases it: the slices counted from then on all
//!    end after the wake-up was complete, however long the OS kept the test's thread
//!    from running in between.
//! 3. The woken task reads the count when it runs.

mod common;

use lutra_sched::sync_mode::SyncMode;
use lutra_sched::{Runtime, current_waker, park, yield_now};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::task::Waker;
use std::time::Duration;

/// Wake-ups measured per sync mode.
const ROUNDS: usize = 20;

/// Slice ends of the yielding tasks between the wake-up and the woken task's run:
/// the running one may count once more before its slice ends, and the slice end
/// after the wake-up runs the woken task.
const BOUND: u64 = 3;

/// Slices the yielding tasks run before each wake-up: proof that the woken task has
/// parked (on one worker they run only once its slice has ended).
const BEFORE_WAKE: u64 = 200;

/// What keeps the worker busy.
#[derive(Clone, Copy, Debug)]
enum Busy {
    /// Two tasks that count a slice and yield, again and again.
    Yielding,
    /// Two chains of tasks, each counting a slice, spawning its successor and
    /// finishing.
    Chained,
}

#[test]
fn a_task_woken_from_outside_runs_within_a_few_slices_of_its_wake_up() {
    for mode in SyncMode::ALL {
        for busy in [Busy::Yielding, Busy::Chained] {
            let late = common::within(Duration::from_secs(120), "the wake-ups", move || {
                slices_to_run(mode, busy)
            });
            assert!(
                late.iter().all(|&slices| slices <= BOUND),
                "{mode}, {busy:?}: slice ends between each wake-up and the woken task's \
                 run: {late:?} (at most {BOUND} each)"
            );
        }
    }
}

/// The counters the busy tasks share with the test.
#[derive(Clone)]
struct Counters {
    slices: Arc<AtomicU64>,
    /// The busy tasks stop (a chain's last task finishes without a successor).
    stop: Arc<AtomicBool>,
    /// The busy tasks go on without counting (protocol, step 2).
    hold: Arc<AtomicBool>,
    /// Chains not yet stopped.
    chains: Arc<AtomicUsize>,
}

impl Counters {
    fn count(&self) {
        if !self.hold.load(Ordering::SeqCst) {
            self.slices.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// One task of a chain: counts its slice and spawns the next, until the stop.
fn chain_link(counters: Counters) {
    if counters.stop.load(Ordering::SeqCst) {
        counters.chains.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    counters.count();
    // The successor runs detached: the chain's end is counted in `chains`.
    drop(lutra_sched::spawn(move || chain_link(counters)));
}

/// Starts the busy tasks; the returned function waits for them once `stop` is set.
fn start_busy(runtime: &Runtime, busy: Busy, counters: &Counters) -> Box<dyn FnOnce()> {
    match busy {
        Busy::Yielding => {
            let tasks: Vec<_> = (0..2)
                .map(|_| {
                    let counters = counters.clone();
                    runtime.spawn(move || {
                        while !counters.stop.load(Ordering::SeqCst) {
                            counters.count();
                            yield_now();
                        }
                    })
                })
                .collect();
            Box::new(move || tasks.into_iter().for_each(|task| task.join().unwrap()))
        }
        Busy::Chained => {
            counters.chains.store(2, Ordering::SeqCst);
            for _ in 0..2 {
                let counters = counters.clone();
                drop(runtime.spawn(move || chain_link(counters)));
            }
            let chains = counters.chains.clone();
            Box::new(move || {
                while chains.load(Ordering::SeqCst) > 0 {
                    std::thread::yield_now();
                }
            })
        }
    }
}

/// For each round, the slice ends of the yielding tasks between the wake-up and
/// the woken task's run.
fn slices_to_run(mode: SyncMode, busy: Busy) -> Vec<u64> {
    let runtime = Runtime::builder().workers(1).sync(mode).build();
    let counters = Counters {
        slices: Arc::new(AtomicU64::new(0)),
        stop: Arc::new(AtomicBool::new(false)),
        hold: Arc::new(AtomicBool::new(false)),
        chains: Arc::new(AtomicUsize::new(0)),
    };
    let Counters {
        slices, stop, hold, ..
    } = counters.clone();
    let finish_busy = start_busy(&runtime, busy, &counters);
    let (wakers, waker) = mpsc::channel::<(Waker, Arc<AtomicBool>)>();
    let (ran, ran_at) = mpsc::channel::<u64>();
    let sleeper = {
        let slices = slices.clone();
        runtime.spawn(move || {
            for _ in 0..ROUNDS {
                let woken = Arc::new(AtomicBool::new(false));
                wakers.send((current_waker(), woken.clone())).unwrap();
                while !woken.load(Ordering::SeqCst) {
                    park();
                }
                ran.send(slices.load(Ordering::SeqCst)).unwrap();
            }
        })
    };
    let mut late = Vec::new();
    for _ in 0..ROUNDS {
        let (waker, woken) = waker.recv().unwrap();
        let parked_at = slices.load(Ordering::SeqCst);
        while slices.load(Ordering::SeqCst) < parked_at + BEFORE_WAKE {
            std::thread::yield_now();
        }
        hold.store(true, Ordering::SeqCst);
        woken.store(true, Ordering::SeqCst);
        waker.wake();
        let woken_at = slices.load(Ordering::SeqCst);
        hold.store(false, Ordering::SeqCst);
        late.push(ran_at.recv().unwrap() - woken_at);
    }
    sleeper.join().unwrap();
    stop.store(true, Ordering::SeqCst);
    finish_busy();
    late
}
