//! Task semantics under far more tasks than workers: join with results and panics,
//! park/unpark with no lost wake-up, barriers, tasks migrating between workers while
//! their transactions stay correct, `retry` parking a task (not its worker), pinned
//! tasks, and changing the number of workers while tasks run.
//!
//! Every test runs in both synchronisation modes of the runtime (locks, transactions).

use lutra_sched::sync_mode::SyncMode;
use lutra_sched::{Barrier, Runtime, TaskParking, current_waker, park, worker_index, yield_now};
use lutra_stm::{Config, DesignKind, Stm, TVar, cm};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn task_stm(design: DesignKind) -> Stm {
    Stm::new(
        Config::default()
            .with_design(design)
            .with_shared_manager(cm::by_name("backoff").unwrap())
            .with_parking(Arc::new(TaskParking)),
    )
}

#[test]
fn join_returns_results_and_panics_of_many_tasks() {
    SyncMode::ALL
        .into_iter()
        .for_each(join_returns_results_and_panics_of_many_tasks_in);
}

fn join_returns_results_and_panics_of_many_tasks_in(mode: SyncMode) {
    let runtime = Runtime::builder().workers(2).sync(mode).build();
    let tasks: Vec<_> = (0..300u64)
        .map(|n| {
            runtime.spawn(move || {
                yield_now();
                if n % 7 == 0 {
                    panic!("task {n} failed");
                }
                n
            })
        })
        .collect();
    for (n, task) in tasks.into_iter().enumerate() {
        match task.join() {
            Ok(value) => assert_eq!(value, n as u64),
            Err(payload) => {
                assert_eq!(n % 7, 0);
                assert_eq!(
                    payload.downcast_ref::<String>().unwrap(),
                    &format!("task {n} failed")
                );
            }
        }
    }
}

/// A ping-pong between two tasks through wakers, many times over, with other tasks
/// competing for the workers: a lost wake-up would hang the test.
#[test]
fn ping_pong_through_park_and_wakers_loses_nothing() {
    SyncMode::ALL
        .into_iter()
        .for_each(ping_pong_through_park_and_wakers_loses_nothing_in);
}

fn ping_pong_through_park_and_wakers_loses_nothing_in(mode: SyncMode) {
    let runtime = Runtime::builder().workers(2).sync(mode).build();
    let turn = Arc::new(AtomicUsize::new(0));
    let wakers: Arc<Mutex<[Option<std::task::Waker>; 2]>> = Arc::new(Mutex::new([None, None]));
    let players: Vec<_> = (0..2usize)
        .map(|me| {
            let (turn, wakers) = (turn.clone(), wakers.clone());
            runtime.spawn(move || {
                for round in 0..2000 {
                    loop {
                        wakers.lock().unwrap()[me] = Some(current_waker());
                        if turn.load(Ordering::SeqCst) == round * 2 + me {
                            break;
                        }
                        park();
                    }
                    turn.fetch_add(1, Ordering::SeqCst);
                    if let Some(other) = wakers.lock().unwrap()[1 - me].take() {
                        other.wake();
                    }
                }
            })
        })
        .collect();
    let noise: Vec<_> = (0..30)
        .map(|_| runtime.spawn(|| (0..200).for_each(|_| yield_now())))
        .collect();
    players
        .into_iter()
        .chain(noise)
        .for_each(|task| task.join().unwrap());
    assert_eq!(turn.load(Ordering::SeqCst), 4000);
}

/// 256 tasks on 2 workers transfer money; they yield between transactions, so they
/// move between workers; audits check the total inside transactions, and nothing is
/// lost at the end.
#[test]
fn bank_conservation_with_256_migrating_tasks() {
    SyncMode::ALL
        .into_iter()
        .for_each(bank_conservation_with_256_migrating_tasks_in);
}

fn bank_conservation_with_256_migrating_tasks_in(mode: SyncMode) {
    for design in DesignKind::ALL {
        let runtime = Runtime::builder().workers(2).sync(mode).build();
        let stm = task_stm(design);
        let accounts: Arc<Vec<TVar<i64>>> = Arc::new((0..32).map(|_| TVar::new(1_000)).collect());
        let seen_workers = Arc::new(Mutex::new(HashSet::new()));
        let tasks: Vec<_> = (0..256usize)
            .map(|id| {
                let (stm, accounts, seen) = (stm.clone(), accounts.clone(), seen_workers.clone());
                runtime.spawn(move || {
                    let mut workers = HashSet::new();
                    for step in 0..40usize {
                        workers.insert(worker_index().unwrap());
                        if step % 8 == 0 {
                            let total = stm.atomically(|tx| {
                                accounts.iter().map(|a| tx.read(a)).sum::<Result<i64, _>>()
                            });
                            assert_eq!(total, 32_000);
                        } else {
                            let from = (id + step) % 32;
                            let to = (id * 7 + step * 3 + 1) % 32;
                            stm.atomically(|tx| {
                                tx.modify(&accounts[from], |b| b - 5)?;
                                tx.modify(&accounts[to], |b| b + 5)
                            });
                        }
                        yield_now();
                    }
                    seen.lock().unwrap().insert(workers.len());
                })
            })
            .collect();
        tasks.into_iter().for_each(|task| task.join().unwrap());
        let total =
            stm.atomically(|tx| accounts.iter().map(|a| tx.read(a)).sum::<Result<i64, _>>());
        assert_eq!(total, 32_000, "{mode} {design:?}");
        let migrated = seen_workers.lock().unwrap().contains(&2);
        assert!(
            migrated || tasks_migrate_within(&runtime, Duration::from_secs(20)),
            "{mode}: no task ever moved between workers"
        );
    }
}

/// Whether a task that keeps yielding is resumed by both workers before `limit` (on a
/// loaded machine one worker thread may get no CPU for the whole bank phase). The
/// first task that sees both stops the others.
fn tasks_migrate_within(runtime: &Runtime, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let moved = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let moved = moved.clone();
            runtime.spawn(move || {
                let mut workers = HashSet::new();
                while !moved.load(Ordering::Relaxed) && Instant::now() < deadline {
                    workers.insert(worker_index().unwrap());
                    if workers.len() == 2 {
                        moved.store(true, Ordering::Relaxed);
                    }
                    yield_now();
                }
            })
        })
        .collect();
    tasks.into_iter().for_each(|task| task.join().unwrap());
    moved.load(Ordering::Relaxed)
}

/// One worker, a consumer that `retry`s on an empty queue, and a producer that fills
/// it later: if `retry` blocked the worker instead of parking the task, the producer
/// could never run.
#[test]
fn retry_parks_the_task_not_the_worker() {
    SyncMode::ALL
        .into_iter()
        .for_each(retry_parks_the_task_not_the_worker_in);
}

fn retry_parks_the_task_not_the_worker_in(mode: SyncMode) {
    let runtime = Runtime::builder().workers(1).sync(mode).build();
    let stm = task_stm(DesignKind::WriteBackCtl);
    let queue = Arc::new(TVar::new(Vec::<u32>::new()));
    let consumer = {
        let (stm, queue) = (stm.clone(), queue.clone());
        runtime.spawn(move || {
            (0..50)
                .map(|_| {
                    stm.atomically(|tx| {
                        let mut items = tx.read(&queue)?;
                        match items.pop() {
                            Some(item) => tx.write(&queue, items).map(|()| item),
                            None => tx.retry(),
                        }
                    })
                })
                .sum::<u32>()
        })
    };
    let producer = {
        let (stm, queue) = (stm.clone(), queue.clone());
        runtime.spawn(move || {
            for item in 1..=50u32 {
                stm.atomically(|tx| {
                    tx.modify(&queue, |mut items| {
                        items.push(item);
                        items
                    })
                });
                yield_now();
            }
        })
    };
    producer.join().unwrap();
    assert_eq!(consumer.join().unwrap(), (1..=50).sum::<u32>());
    assert!(
        stm.stats().total.retry_waits > 0,
        "the consumer never had to wait"
    );
}

#[test]
fn pinned_tasks_stay_on_their_worker() {
    SyncMode::ALL
        .into_iter()
        .for_each(pinned_tasks_stay_on_their_worker_in);
}

fn pinned_tasks_stay_on_their_worker_in(mode: SyncMode) {
    let runtime = Runtime::builder().workers(2).sync(mode).build();
    let tasks: Vec<_> = (0..40usize)
        .map(|n| {
            runtime
                .task()
                .pinned_to(n % 2)
                .spawn(move || {
                    (0..50).all(|_| {
                        yield_now();
                        worker_index() == Some(n % 2)
                    })
                })
                .unwrap()
        })
        .collect();
    assert!(tasks.into_iter().all(|task| task.join().unwrap()));
}

#[test]
fn workers_can_be_removed_and_added_while_tasks_run() {
    SyncMode::ALL
        .into_iter()
        .for_each(workers_can_be_removed_and_added_while_tasks_run_in);
}

fn workers_can_be_removed_and_added_while_tasks_run_in(mode: SyncMode) {
    let runtime = Runtime::builder().workers(2).sync(mode).build();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (stop, done) = (stop.clone(), done.clone());
            runtime.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    done.fetch_add(1, Ordering::Relaxed);
                    yield_now();
                }
            })
        })
        .collect();
    runtime.set_workers(1);
    assert_eq!(runtime.workers(), 1);
    let before = done.load(Ordering::Relaxed);
    let deadline = Instant::now() + Duration::from_secs(5);
    while done.load(Ordering::Relaxed) < before + 1000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        done.load(Ordering::Relaxed) >= before + 1000,
        "tasks stopped running with one worker"
    );
    runtime.set_workers(64);
    assert!(runtime.workers() <= std::thread::available_parallelism().unwrap().get());
    stop.store(true, Ordering::Relaxed);
    tasks.into_iter().for_each(|task| task.join().unwrap());
}

#[test]
fn barrier_rounds_hold_with_far_more_tasks_than_workers() {
    SyncMode::ALL
        .into_iter()
        .for_each(barrier_rounds_hold_with_far_more_tasks_than_workers_in);
}

fn barrier_rounds_hold_with_far_more_tasks_than_workers_in(mode: SyncMode) {
    let runtime = Runtime::builder().workers(2).sync(mode).build();
    let parties = 500;
    let barrier = Arc::new(Barrier::new(parties));
    let arrived = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..parties)
        .map(|_| {
            let (barrier, arrived) = (barrier.clone(), arrived.clone());
            runtime.spawn(move || {
                let mut leader_rounds = 0;
                for round in 1..=4 {
                    arrived.fetch_add(1, Ordering::SeqCst);
                    leader_rounds += usize::from(barrier.wait());
                    assert!(arrived.load(Ordering::SeqCst) >= round * parties);
                    barrier.wait();
                }
                leader_rounds
            })
        })
        .collect();
    let leaders: usize = tasks.into_iter().map(|task| task.join().unwrap()).sum();
    assert_eq!(leaders, 4);
}

#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let buffer = std::hint::black_box([depth; 64]);
    if depth == 0 {
        0
    } else {
        buffer[3] + recurse(depth - 1)
    }
}

#[test]
fn a_stack_overflow_fails_only_that_task() {
    SyncMode::ALL
        .into_iter()
        .for_each(a_stack_overflow_fails_only_that_task_in);
}

fn a_stack_overflow_fails_only_that_task_in(mode: SyncMode) {
    let runtime = Runtime::builder()
        .workers(2)
        .sync(mode)
        .stack_size(64 * 1024)
        .build();
    let overflowing = runtime.spawn(|| recurse(10_000_000));
    let error = overflowing.join().unwrap_err();
    let message = error.downcast_ref::<String>().expect("a message");
    assert!(message.contains("overflowed its stack"), "{message}");
    let fine: Vec<_> = (0..10u64)
        .map(|n| runtime.spawn(move || recurse(10) + n))
        .collect();
    let total: u64 = fine.into_iter().map(|task| task.join().unwrap()).sum();
    assert_eq!(total, 10 * (0..=10).sum::<u64>() + (0..10).sum::<u64>());
}
