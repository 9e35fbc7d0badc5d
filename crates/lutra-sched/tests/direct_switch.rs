//! The direct switch (`worker.rs`: a task woken by the running task, which then
//! parks, runs next on the same worker without the run queue), in both sync modes:
//!
//! - nothing is lost: many pairs of tasks pass values through one-slot mailboxes (the
//!   putter wakes the taker, then parks on the full slot; the taker wakes the putter,
//!   then parks on the empty one: every hand-over is a wake followed by a park), on 2
//!   workers, and every value arrives exactly once;
//! - fairness: two tasks that keep waking each other on one worker do not starve the
//!   other tasks (a yielding task on the same worker and a task arriving through the
//!   global queue both finish, and only then do the two stop).
//!
//! Both count the slices run through the direct switch (`Runtime::direct_switches`),
//! so that they fail if the switch never happens and the run queue does its work.
//! Nothing here depends on timing: a lost wake-up or a starved task hangs, and
//! `within` turns a hang into a failure.

use lutra_sched::sync_mode::SyncMode;
use lutra_sched::{Runtime, current_waker, park, yield_now};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::Duration;

mod common;
use common::within;

/// A one-slot mailbox between one putter and one taker.
#[derive(Default)]
struct Mailbox {
    slot: Mutex<Slot>,
}

#[derive(Default)]
struct Slot {
    value: Option<u64>,
    putter: Option<Waker>,
    taker: Option<Waker>,
}

impl Mailbox {
    /// Puts `value` once the slot is empty, waking the taker; `None` (the slot was
    /// full, the putter's waker stored) means park and try again.
    fn try_put(&self, value: u64) -> Option<()> {
        let mut slot = self.slot.lock().unwrap();
        if slot.value.is_some() {
            slot.putter = Some(current_waker());
            return None;
        }
        slot.value = Some(value);
        if let Some(taker) = slot.taker.take() {
            taker.wake();
        }
        Some(())
    }

    fn put(&self, value: u64) {
        while self.try_put(value).is_none() {
            park();
        }
    }

    /// Takes the value once there is one, waking the putter.
    fn try_take(&self) -> Option<u64> {
        let mut slot = self.slot.lock().unwrap();
        let Some(value) = slot.value.take() else {
            slot.taker = Some(current_waker());
            return None;
        };
        if let Some(putter) = slot.putter.take() {
            putter.wake();
        }
        Some(value)
    }

    fn take(&self) -> u64 {
        loop {
            if let Some(value) = self.try_take() {
                return value;
            }
            park();
        }
    }
}

fn runtime(mode: SyncMode, workers: usize) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .allow_more_workers_than_cores()
        .sync(mode)
        .build()
}

#[test]
fn hand_overs_deliver_every_value_exactly_once() {
    const PAIRS: u64 = 60;
    const VALUES: u64 = 2_000;
    for mode in [SyncMode::Locks, SyncMode::Transactions] {
        within(Duration::from_secs(120), "the hand-overs", move || {
            let runtime = runtime(mode, 2);
            let takers: Vec<_> = (0..PAIRS)
                .map(|pair| {
                    let mailbox = Arc::new(Mailbox::default());
                    let putter = mailbox.clone();
                    runtime.spawn(move || {
                        for i in 0..VALUES {
                            putter.put(pair * VALUES + i);
                        }
                    });
                    runtime.spawn(move || {
                        let mut seen = vec![0u32; VALUES as usize];
                        for _ in 0..VALUES {
                            let value = mailbox.take();
                            assert_eq!(value / VALUES, pair, "a value of another pair");
                            seen[(value % VALUES) as usize] += 1;
                        }
                        seen
                    })
                })
                .collect();
            for (pair, taker) in takers.into_iter().enumerate() {
                let seen = taker.join().unwrap();
                assert!(
                    seen.iter().all(|&count| count == 1),
                    "under {mode:?}, pair {pair}: a value lost or received twice"
                );
            }
            // Every hand-over wakes a task and parks: most run through the direct
            // switch (without it the count stays 0).
            let direct = runtime.direct_switches();
            eprintln!(
                "{mode:?}: {direct} direct switches for {} values",
                PAIRS * VALUES
            );
            assert!(
                direct >= PAIRS * VALUES / 4,
                "under {mode:?}: {direct} direct switches for {} hand-overs",
                PAIRS * VALUES
            );
        });
    }
}

#[test]
fn ping_pong_does_not_starve_the_other_tasks() {
    const YIELDS: u32 = 2_000;
    for mode in [SyncMode::Locks, SyncMode::Transactions] {
        within(Duration::from_secs(60), "the starved tasks", move || {
            let runtime = runtime(mode, 1);
            let stop = Arc::new(AtomicBool::new(false));
            let (ping, pong) = (Arc::new(Mailbox::default()), Arc::new(Mailbox::default()));
            // Each side puts into its mailbox and takes from the other's: every turn
            // wakes the other side, then parks.
            let side = |out: Arc<Mailbox>, back: Arc<Mailbox>, stop: Arc<AtomicBool>| {
                move || {
                    let mut turns = 0u64;
                    loop {
                        let stopping = stop.load(Ordering::SeqCst);
                        out.put(u64::from(stopping));
                        turns += 1;
                        if back.take() == 1 || stopping {
                            return turns;
                        }
                    }
                }
            };
            let a = runtime.spawn(side(ping.clone(), pong.clone(), stop.clone()));
            let b = runtime.spawn(side(pong, ping, stop.clone()));
            let yields = Arc::new(AtomicU32::new(0));
            let counter = yields.clone();
            let yielder = runtime.spawn(move || {
                for _ in 0..YIELDS {
                    counter.fetch_add(1, Ordering::SeqCst);
                    yield_now();
                }
            });
            // Spawned from this thread: through the global queue.
            let late = runtime.spawn(|| 7);
            yielder.join().unwrap();
            assert_eq!(late.join().unwrap(), 7);
            assert_eq!(yields.load(Ordering::SeqCst), YIELDS);
            stop.store(true, Ordering::SeqCst);
            let turns = a.join().unwrap() + b.join().unwrap();
            assert!(turns > 0);
            // On one worker each turn is a wake then a park: the direct switch runs
            // the woken side next for all but one slice in `MAX_HANDOFFS + 1`.
            let direct = runtime.direct_switches();
            eprintln!("{mode:?}: {direct} direct switches for {turns} turns");
            assert!(
                direct >= turns / 2,
                "under {mode:?}: {direct} direct switches for {turns} turns"
            );
        });
    }
}
