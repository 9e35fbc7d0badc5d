//! The synchronisation toolkit and the runtime's transactional mode.
//!
//! - `SyncCell`: concurrent updates from threads and tasks lose nothing; `wait_until`
//!   sleeps until, and wakes on, the update that makes its condition true; closures re-run in
//!   transactions are harmless; nesting is refused with a clear message.
//! - `SyncQueue`: producers and consumers (blocking and non-blocking) pass every item
//!   exactly once; a property test against `VecDeque`.
//! - Transactional mode kept apart from user transactions: a user's long irrevocable
//!   transaction on `Stm::global()` does not stall task scheduling; spawning and waking
//!   inside a user transaction's closure works.
//! - LUTS's switch in both modes.
//!
//! Every test runs in both modes.

use lutra_sched::sync_mode::{SITE_RUN_QUEUE, SyncCell, SyncDomain, SyncMode, SyncQueue};
use lutra_sched::{Runtime, current_waker, park, set_tx_id, switch, yield_now};
use lutra_stm::{Stm, TVar};
use proptest::prelude::*;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

mod common;
use common::{current_tid, wait_until_asleep, waits_without_timeout, within};

#[test]
fn sync_cell_updates_from_threads_and_tasks_lose_nothing() {
    for mode in SyncMode::ALL {
        within(Duration::from_secs(60), "cell stress", move || {
            let runtime = Runtime::builder().workers(2).sync(mode).build();
            let domain = runtime.sync_domain().clone();
            // A count and a list, changed together: they must always agree.
            let cell = Arc::new(SyncCell::new(&domain, (0u64, Vec::<u32>::new())).with_site(9));
            let threads: Vec<_> = (0..4u32)
                .map(|t| {
                    let cell = cell.clone();
                    std::thread::spawn(move || {
                        for n in 0..500 {
                            cell.update(|(count, list)| {
                                *count += 1;
                                list.push(t * 1000 + n);
                            });
                        }
                    })
                })
                .collect();
            let tasks: Vec<_> = (0..64u32)
                .map(|t| {
                    let cell = cell.clone();
                    runtime.spawn(move || {
                        for n in 0..20 {
                            cell.update(|(count, list)| {
                                *count += 1;
                                list.push(100_000 + t * 100 + n);
                            });
                            let (count, len) = cell.read(|(count, list)| (*count, list.len()));
                            assert_eq!(count as usize, len, "{mode}: a torn read");
                            yield_now();
                        }
                    })
                })
                .collect();
            threads.into_iter().for_each(|t| t.join().unwrap());
            tasks.into_iter().for_each(|t| t.join().unwrap());
            let (count, mut list) = cell.read(Clone::clone);
            assert_eq!(count, 4 * 500 + 64 * 20, "{mode}");
            list.sort_unstable();
            let before = list.len();
            list.dedup();
            assert_eq!(list.len(), before, "{mode}: an update was applied twice");
            assert_eq!(list.len() as u64, count, "{mode}: an update was lost");
            if mode == SyncMode::Transactions {
                let stats = domain.stats().unwrap();
                assert!(stats.by_site[&9].commits >= count, "{mode}: {stats:?}");
            }
        });
    }
}

#[test]
fn sync_cell_wait_until_wakes_on_the_update_that_makes_it_true() {
    for mode in SyncMode::ALL {
        within(Duration::from_secs(20), "cell wait", move || {
            let domain = SyncDomain::new(mode);
            let stage = Arc::new(SyncCell::new(&domain, 0u32));
            let (tids, tid) = mpsc::channel();
            let waiters: Vec<_> = (1..=3u32)
                .map(|wanted| {
                    let (stage, tids) = (stage.clone(), tids.clone());
                    std::thread::spawn(move || {
                        tids.send((wanted, current_tid())).unwrap();
                        stage.wait_until(|&now| (now >= wanted).then_some(now))
                    })
                })
                .collect();
            let mut waiting: Vec<(u32, i32)> = (0..3).map(|_| tid.recv().unwrap()).collect();
            // Each update comes only once every waiter still waiting provably sleeps
            // (handshake), and the waiter it satisfies must see exactly it.
            for (wanted, waiter) in (1..=3u32).zip(waiters) {
                let tids: Vec<i32> = waiting.iter().map(|&(_, tid)| tid).collect();
                wait_until_asleep(&tids);
                assert_sleep_until_woken(&tids, mode);
                stage.update(|n| *n += 1);
                assert_eq!(waiter.join().unwrap(), wanted, "{mode}");
                waiting.retain(|&(of, _)| of != wanted);
            }
            if mode == SyncMode::Transactions {
                assert!(
                    domain.stats().unwrap().total.retry_waits > 0,
                    "the waiters never blocked in retry"
                );
            }
        });
    }
}

/// Checks that the waiters `tids`, asleep, sleep until an update wakes them: each is
/// blocked in a wait with no timeout. A waiter that re-checked its condition on a
/// timer, instead of waiting for the update's wake-up, would wait with one.
fn assert_sleep_until_woken(tids: &[i32], mode: SyncMode) {
    let timed: Vec<i32> = tids
        .iter()
        .copied()
        .filter(|&tid| !waits_without_timeout(tid))
        .collect();
    assert!(
        timed.is_empty(),
        "{mode}: waiters {timed:?} of {tids:?} wait with a timeout, not for the update"
    );
}

#[test]
fn nested_sync_operations_are_refused_clearly() {
    let domain = SyncDomain::new(SyncMode::Transactions);
    let (outer, inner) = (SyncCell::new(&domain, 1u8), SyncCell::new(&domain, 2u8));
    let nested = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        outer.update(|_| inner.read(|n| *n))
    }));
    let error = nested.unwrap_err();
    let message = error.downcast_ref::<&str>().copied().unwrap_or_default();
    assert!(message.contains("do not nest"), "{message:?}");
    // Both cells still work after the refused attempt was rolled back.
    outer.update(|n| *n += 1);
    assert_eq!((outer.read(|n| *n), inner.read(|n| *n)), (2, 2));
}

#[test]
fn sync_queue_passes_every_item_exactly_once() {
    const PRODUCERS: u64 = 3;
    const ITEMS: u64 = 5_000;
    for mode in SyncMode::ALL {
        within(Duration::from_secs(60), "queue stress", move || {
            let queue = Arc::new(SyncQueue::new(&SyncDomain::new(mode)));
            let producers: Vec<_> = (0..PRODUCERS)
                .map(|p| {
                    let queue = queue.clone();
                    std::thread::spawn(move || {
                        (0..ITEMS).for_each(|n| queue.push(Box::new(p * ITEMS + n)))
                    })
                })
                .collect();
            let total = PRODUCERS * ITEMS;
            // Two blocking consumers take a fixed share; a polling one takes what it can.
            let blocking: Vec<_> = (0..2)
                .map(|_| {
                    let queue = queue.clone();
                    std::thread::spawn(move || {
                        (0..total / 3).map(|_| *queue.pop()).collect::<Vec<_>>()
                    })
                })
                .collect();
            let mut seen: Vec<u64> = Vec::new();
            let polled_share = total - 2 * (total / 3);
            while (seen.len() as u64) < polled_share {
                match queue.try_pop() {
                    Some(item) => seen.push(*item),
                    None => std::thread::yield_now(),
                }
            }
            producers.into_iter().for_each(|p| p.join().unwrap());
            blocking
                .into_iter()
                .for_each(|c| seen.extend(c.join().unwrap()));
            assert!(queue.is_empty(), "{mode}");
            assert_eq!(queue.len(), 0, "{mode}");
            seen.sort_unstable();
            assert_eq!(seen, (0..total).collect::<Vec<_>>(), "{mode}");
        });
    }
}

#[test]
fn sync_queue_keeps_each_producers_order_and_drops_what_is_left() {
    for mode in SyncMode::ALL {
        let dropped = Arc::new(Mutex::new(0));
        struct Counted(u32, Arc<Mutex<u32>>);
        impl Drop for Counted {
            fn drop(&mut self) {
                *self.1.lock().unwrap() += 1;
            }
        }
        let queue = SyncQueue::new(&SyncDomain::new(mode));
        (0..10).for_each(|n| queue.push(Counted(n, dropped.clone())));
        let first: Vec<u32> = (0..4).map(|_| queue.pop().0).collect();
        assert_eq!(first, [0, 1, 2, 3], "{mode}");
        assert_eq!(
            *dropped.lock().unwrap(),
            4,
            "{mode}: popped items dropped once"
        );
        assert_eq!(queue.len(), 6);
        drop(queue);
        assert_eq!(
            *dropped.lock().unwrap(),
            10,
            "{mode}: the rest dropped with the queue"
        );
    }
}

#[derive(Clone, Debug)]
enum Op {
    Push(u16),
    TryPop,
    Len,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => any::<u16>().prop_map(Op::Push),
        2 => Just(Op::TryPop),
        1 => Just(Op::Len),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any sequence of operations gives what a `VecDeque` gives, in both modes.
    #[test]
    fn sync_queue_behaves_like_a_vec_deque(ops in proptest::collection::vec(op(), 0..200)) {
        for mode in SyncMode::ALL {
            let queue = SyncQueue::new(&SyncDomain::new(mode));
            let mut model = VecDeque::new();
            for op in &ops {
                match op {
                    Op::Push(value) => {
                        queue.push(*value);
                        model.push_back(*value);
                    }
                    Op::TryPop => prop_assert_eq!(queue.try_pop(), model.pop_front()),
                    Op::Len => {
                        prop_assert_eq!(queue.len(), model.len());
                        prop_assert_eq!(queue.is_empty(), model.is_empty());
                    }
                }
            }
            let rest: Vec<u16> = std::iter::from_fn(|| queue.try_pop()).collect();
            prop_assert_eq!(rest, Vec::from(model));
        }
    }
}

/// A user's irrevocable transaction on the process-wide engine holds its commit gate
/// (no other updating transaction of that engine may commit) until tasks of the
/// runtime have been spawned, rescheduled many times, and joined, both from another
/// thread and from inside the irrevocable closure itself: the runtime's transactions
/// run on its private engine, so this finishes (and in tm mode they do not nest into
/// the user's transaction).
#[test]
fn a_users_irrevocable_transaction_does_not_stall_scheduling() {
    for mode in SyncMode::ALL {
        within(Duration::from_secs(30), "irrevocable", move || {
            let runtime = Arc::new(Runtime::builder().workers(2).sync(mode).build());
            let marker = TVar::new(0u64);
            let (outside, inside) = Stm::global().transaction().irrevocable().run(|tx| {
                tx.write(&marker, 1)?;
                let outside = {
                    let runtime = runtime.clone();
                    std::thread::spawn(move || {
                        let tasks: Vec<_> = (0..200u64)
                            .map(|n| {
                                runtime.spawn(move || {
                                    (0..10).for_each(|_| yield_now());
                                    n
                                })
                            })
                            .collect();
                        tasks.into_iter().map(|t| t.join().unwrap()).sum::<u64>()
                    })
                };
                let inside: Vec<_> = (0..50u64)
                    .map(|n| {
                        runtime.spawn(move || {
                            yield_now();
                            n
                        })
                    })
                    .collect();
                let inside: u64 = inside.into_iter().map(|t| t.join().unwrap()).sum();
                Ok((outside.join().unwrap(), inside))
            });
            assert_eq!(outside, (0..200).sum::<u64>(), "{mode}");
            assert_eq!(inside, (0..50).sum::<u64>(), "{mode}");
            runtime.wait_idle();
        });
    }
}

/// Logs `name` after announcing `id` and yielding once.
fn announcer(
    log: &Arc<Mutex<Vec<&'static str>>>,
    id: u64,
    name: &'static str,
) -> impl FnOnce() + Send + 'static {
    let log = log.clone();
    move || {
        set_tx_id(id);
        yield_now();
        log.lock().unwrap().push(name);
    }
}

/// On one worker: A spawns B (id 1) and C (id 2), lets them announce, then switches
/// with id 1: C (another id) runs first, then B, then A. With only B queued, A keeps
/// running.
#[test]
fn switch_runs_a_task_with_another_transaction_id_first() {
    for mode in SyncMode::ALL {
        let runtime = Runtime::builder().workers(1).sync(mode).build();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (b, c) = (announcer(&log, 1, "B"), announcer(&log, 2, "C"));
        let a_log = log.clone();
        runtime
            .spawn(move || {
                let (b, c) = (lutra_sched::spawn(b), lutra_sched::spawn(c));
                yield_now();
                switch(1);
                a_log.lock().unwrap().push("A");
                b.join().unwrap();
                c.join().unwrap();
            })
            .join()
            .unwrap();
        assert_eq!(*log.lock().unwrap(), ["C", "B", "A"], "{mode}");
        assert_eq!(runtime.switches(), 1, "{mode}");

        let runtime = Runtime::builder().workers(1).sync(mode).build();
        let log = Arc::new(Mutex::new(Vec::new()));
        let b = announcer(&log, 1, "B");
        let a_log = log.clone();
        runtime
            .spawn(move || {
                let b = lutra_sched::spawn(b);
                yield_now();
                switch(1);
                a_log.lock().unwrap().push("A");
                b.join().unwrap();
            })
            .join()
            .unwrap();
        assert_eq!(*log.lock().unwrap(), ["A", "B"], "{mode}");
        assert_eq!(runtime.switches(), 0, "{mode}");
    }
}

#[test]
fn waking_and_spawning_inside_a_user_transaction_closure_work_in_tm_mode() {
    within(Duration::from_secs(20), "inside a transaction", || {
        let runtime = Runtime::builder()
            .workers(2)
            .sync(SyncMode::Transactions)
            .build();
        let stm = Stm::default();
        let slot: Arc<Mutex<Option<std::task::Waker>>> = Arc::new(Mutex::new(None));
        let woken = Arc::new(AtomicBool::new(false));
        let sleeper = {
            let (slot, woken) = (slot.clone(), woken.clone());
            runtime.spawn(move || {
                loop {
                    *slot.lock().unwrap() = Some(current_waker());
                    if woken.load(Ordering::SeqCst) {
                        break;
                    }
                    park();
                }
            })
        };
        while slot.lock().unwrap().is_none() {
            std::thread::yield_now();
        }
        let counter = TVar::new(0u32);
        let child = stm.atomically(|tx| {
            tx.modify(&counter, |n| n + 1)?;
            woken.store(true, Ordering::SeqCst);
            if let Some(waker) = slot.lock().unwrap().take() {
                waker.wake();
            }
            Ok(runtime.spawn(|| 7))
        });
        assert_eq!(child.join().unwrap(), 7);
        sleeper.join().unwrap();
        let stats = runtime.sync_domain().stats().unwrap();
        assert!(stats.by_site[&SITE_RUN_QUEUE].commits > 0);
    });
}
