//! Blocking `retry` and `or_else`, for both designs.
//!
//! - A consumer blocked on an empty queue parks once and stays parked (no polling, no
//!   spurious wake-up) until the producer's commit, which wakes it exactly once; the
//!   wait is counted in the statistics. The producer commits only once the consumer is
//!   provably parked (a handshake on a counting `Parking`), so the test does not
//!   depend on the machine's speed.
//! - `or_else`: when the first branch retries, its writes are undone and the second
//!   runs (also nested); when both retry, the transaction waits on everything either
//!   read and is woken by a write to a location only the first branch read, again
//!   parked once and woken once.
//! - Stress: 64 threads on 2 cores pass items through bounded queues, blocking with
//!   `retry` when a queue is empty or full; every item arrives exactly once.

mod common;

use common::{CountingParking, config, engine, wait_for, within};
use lutra_stm::{DesignKind, Stm, TVar};
use std::sync::Arc;
use std::time::Duration;

/// How long the consumer is left parked before the producer commits: a parked
/// consumer must stay parked however long that is (the test counts its parks, so it
/// does not depend on the machine's speed).
const WAIT: Duration = Duration::from_millis(100);

/// An engine whose waits go through a [`CountingParking`].
fn counted_engine(design: DesignKind, manager: &str) -> (Stm, Arc<CountingParking>) {
    let parking = Arc::new(CountingParking::default());
    let stm = Stm::new(config(design, manager).with_parking(parking.clone()));
    (stm, parking)
}

/// Runs `consume` on its own thread; once the consumer is provably parked in `retry`
/// (its parking counted a `park` and the statistics a retry wait), leaves it parked
/// for `WAIT`, checks that it neither woke nor polled meanwhile, then commits
/// `produce` and checks that exactly one wake-up reached it. Returns what `consume`
/// returned.
fn block_then_produce<T: Send + 'static>(
    stm: &Stm,
    parking: &CountingParking,
    consume: impl FnOnce() -> T + Send + 'static,
    produce: impl FnOnce(),
) -> T {
    let consumer = std::thread::spawn(consume);
    wait_for(|| parking.parks() >= 1);
    assert!(
        stm.stats().total.retry_waits >= 1,
        "the consumer parked outside retry"
    );
    // The sleep is the thing under test: a parked consumer stays parked.
    std::thread::sleep(WAIT);
    assert!(
        !consumer.is_finished(),
        "the consumer finished before the commit"
    );
    assert_eq!(
        parking.parks(),
        1,
        "the blocked consumer woke and parked again"
    );
    assert_eq!(parking.yields(), 0, "the blocked consumer polled");
    assert_eq!(
        parking.wakes(),
        0,
        "the consumer was woken before the commit"
    );
    produce();
    let value = consumer.join().expect("the consumer failed");
    assert_eq!(
        parking.wakes(),
        1,
        "the commit did not wake the consumer once"
    );
    assert_eq!(parking.parks(), 1, "the woken consumer parked again");
    value
}

#[test]
fn a_blocked_consumer_uses_no_cpu_and_wakes_on_commit() {
    for design in DesignKind::ALL {
        within(Duration::from_secs(20), "blocked consumer", move || {
            let (stm, parking) = counted_engine(design, "backoff");
            let queue = Arc::new(TVar::new(Vec::<u64>::new()));
            let (stm2, queue2) = (stm.clone(), queue.clone());
            let item = block_then_produce(
                &stm,
                &parking,
                move || {
                    stm2.atomically(|tx| {
                        let mut items = tx.read(&queue2)?;
                        let Some(item) = items.pop() else {
                            return tx.retry();
                        };
                        tx.write(&queue2, items)?;
                        Ok(item)
                    })
                },
                || stm.atomically(|tx| tx.write(&queue, vec![42])),
            );
            assert_eq!(item, 42);
            assert!(stm.atomically(|tx| tx.read(&queue)).is_empty());
            let stats = stm.stats().total;
            assert_eq!(stats.retry_waits, 1, "{design:?}: one commit, one wake-up");
        });
    }
}

#[test]
fn or_else_undoes_a_retried_branch_and_runs_the_other() {
    for design in DesignKind::ALL {
        let stm = engine(design, "backoff");
        let vars = [TVar::new(0i64), TVar::new(0i64), TVar::new(5i64)];
        let taken = stm.atomically(|tx| {
            tx.write(&vars[0], 1)?;
            tx.or_else(
                |tx| {
                    // Overwrite an earlier write and add a new one, then give up.
                    tx.write(&vars[0], 100)?;
                    tx.write(&vars[1], 100)?;
                    tx.retry()
                },
                |tx| {
                    assert_eq!(tx.read(&vars[0])?, 1, "the first branch's write survived");
                    assert_eq!(tx.read(&vars[1])?, 0, "the first branch's write survived");
                    let n = tx.read(&vars[2])?;
                    tx.write(&vars[2], n - 1)?;
                    Ok("second")
                },
            )
        });
        assert_eq!(taken, "second");
        let end =
            stm.atomically(|tx| Ok([tx.read(&vars[0])?, tx.read(&vars[1])?, tx.read(&vars[2])?]));
        assert_eq!(end, [1, 0, 4], "{design:?}");
    }
}

#[test]
fn nested_or_else_undoes_every_retried_branch() {
    for design in DesignKind::ALL {
        let stm = engine(design, "backoff");
        let vars = [TVar::new(0i64), TVar::new(0i64), TVar::new(0i64)];
        let chosen = stm.atomically(|tx| {
            tx.or_else(
                |tx| {
                    tx.write(&vars[0], 1)?;
                    tx.or_else(
                        |tx| {
                            tx.write(&vars[0], 2)?;
                            tx.write(&vars[1], 2)?;
                            tx.retry()
                        },
                        |tx| {
                            assert_eq!(tx.read(&vars[0])?, 1);
                            tx.write(&vars[1], 3)?;
                            tx.retry()
                        },
                    )
                },
                |tx| {
                    assert_eq!(tx.read(&vars[0])?, 0);
                    assert_eq!(tx.read(&vars[1])?, 0);
                    tx.write(&vars[2], 7)?;
                    Ok(3)
                },
            )
        });
        assert_eq!(chosen, 3);
        let end =
            stm.atomically(|tx| Ok([tx.read(&vars[0])?, tx.read(&vars[1])?, tx.read(&vars[2])?]));
        assert_eq!(end, [0, 0, 7], "{design:?}");
    }
}

/// Both branches retry: the transaction must wait on what either read, and a write to
/// `first` (read only by the first branch) must wake it.
#[test]
fn or_else_waits_on_both_branches_reads() {
    for design in DesignKind::ALL {
        within(Duration::from_secs(20), "or_else wait", move || {
            let (stm, parking) = counted_engine(design, "timestamp");
            let queues = Arc::new([TVar::new(0u32), TVar::new(0u32), TVar::new(0u32)]);
            let (stm2, queues2) = (stm.clone(), queues.clone());
            let taken = block_then_produce(
                &stm,
                &parking,
                move || {
                    stm2.atomically(|tx| {
                        tx.or_else(
                            |tx| {
                                let n = tx.read(&queues2[0])?;
                                if n == 0 {
                                    tx.write(&queues2[2], 1)?;
                                    return tx.retry();
                                }
                                tx.write(&queues2[0], n - 1).map(|()| "first")
                            },
                            |tx| {
                                let n = tx.read(&queues2[1])?;
                                if n == 0 {
                                    return tx.retry();
                                }
                                tx.write(&queues2[1], n - 1).map(|()| "second")
                            },
                        )
                    })
                },
                || stm.atomically(|tx| tx.write(&queues[0], 1)),
            );
            assert_eq!(taken, "first");
            let end = stm.atomically(|tx| {
                Ok([
                    tx.read(&queues[0])?,
                    tx.read(&queues[1])?,
                    tx.read(&queues[2])?,
                ])
            });
            assert_eq!(end, [0, 0, 0], "{design:?}");
        });
    }
}

/// Bounded queues between 32 producers and 32 consumers; each queue holds at most 2
/// items, so both sides block in `retry`.
fn pipeline(design: DesignKind, manager: &str) {
    const PAIRS: usize = 32;
    const QUEUES: usize = 4;
    const ITEMS: u64 = 40;
    const CAPACITY: usize = 2;
    let stm = engine(design, manager);
    let queues: Arc<Vec<TVar<Vec<u64>>>> =
        Arc::new((0..QUEUES).map(|_| TVar::new(Vec::new())).collect());
    let producers: Vec<_> = (0..PAIRS)
        .map(|id| {
            let (stm, queues) = (stm.clone(), queues.clone());
            std::thread::spawn(move || {
                let queue = &queues[id % QUEUES];
                for seq in 0..ITEMS {
                    let item = id as u64 * 1_000 + seq;
                    stm.atomically(|tx| {
                        let mut items = tx.read(queue)?;
                        if items.len() >= CAPACITY {
                            return tx.retry();
                        }
                        items.insert(0, item);
                        tx.write(queue, items)
                    });
                }
            })
        })
        .collect();
    let consumers: Vec<_> = (0..PAIRS)
        .map(|id| {
            let (stm, queues) = (stm.clone(), queues.clone());
            std::thread::spawn(move || {
                let queue = &queues[id % QUEUES];
                (0..ITEMS)
                    .map(|_| {
                        stm.atomically(|tx| {
                            let mut items = tx.read(queue)?;
                            let Some(item) = items.pop() else {
                                return tx.retry();
                            };
                            tx.write(queue, items)?;
                            Ok(item)
                        })
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    producers.into_iter().for_each(|p| p.join().unwrap());
    let mut received: Vec<u64> = consumers
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    received.sort_unstable();
    let mut sent: Vec<u64> = (0..PAIRS as u64)
        .flat_map(|id| (0..ITEMS).map(move |seq| id * 1_000 + seq))
        .collect();
    sent.sort_unstable();
    assert_eq!(
        received, sent,
        "{design:?}/{manager}: items lost or duplicated"
    );
    assert!(stm.stats().total.retry_waits > 0, "nobody ever blocked");
}

#[test]
fn bounded_queues_block_both_ways_without_losing_items() {
    within(Duration::from_secs(60), "pipeline", || {
        for design in DesignKind::ALL {
            for manager in ["backoff", "timestamp", "aggressive"] {
                pipeline(design, manager);
            }
        }
    });
}
