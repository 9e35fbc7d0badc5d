//! Compares the runtime's two synchronisation modes side by side (a ratio, not a
//! time: these machines are noisy): `cargo run --release -p lutra-sched --example
//! sync_modes [rounds]`.
//!
//! - `spawn+yield`: 10,000 tasks, each yields 10 times (every yield is a run-queue
//!   push and pop), joined.
//! - `one-thread`: one thread pushes and pops 400,000 `SyncQueue` items (the cost
//!   of one operation: a mutex, or a transaction).
//! - `ping-pong`: 50 pairs of tasks hand a turn back and forth 200 times through
//!   park and wakers (what a rendezvous channel does); `+work`: with 2 µs of work
//!   per turn (about what a Lua process spends per message).
//!
//! `SYNC_STATS=1` prints the private engine's commits, aborts and `retry` waits.
//! - `sync-queue`: 2 producer threads and 2 consumer threads pass 200,000 items
//!   through a `SyncQueue` (blocking pops).

use lutra_sched::sync_mode::{SyncDomain, SyncMode, SyncQueue};
use lutra_sched::{Runtime, current_waker, park, yield_now};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::{Duration, Instant};

fn spawn_yield(mode: SyncMode) -> Duration {
    let runtime = Runtime::builder().sync(mode).build();
    let start = Instant::now();
    let tasks: Vec<_> = (0..10_000)
        .map(|_| runtime.spawn(|| (0..10).for_each(|_| yield_now())))
        .collect();
    tasks.into_iter().for_each(|task| task.join().unwrap());
    start.elapsed()
}

struct Turn {
    turn: AtomicUsize,
    wakers: Mutex<[Option<Waker>; 2]>,
}

/// Spins for about `nanos` (the work a process does per message).
fn work(nanos: u64) {
    let until = Instant::now() + Duration::from_nanos(nanos);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

fn ping_pong(mode: SyncMode, work_nanos: u64) -> Duration {
    let runtime = Runtime::builder().sync(mode).build();
    let start = Instant::now();
    let tasks: Vec<_> = (0..50)
        .flat_map(|_| {
            let pair = Arc::new(Turn {
                turn: AtomicUsize::new(0),
                wakers: Mutex::new([None, None]),
            });
            (0..2usize).map(move |me| {
                let pair = pair.clone();
                (me, pair)
            })
        })
        .map(|(me, pair)| {
            runtime.spawn(move || {
                for round in 0..200 {
                    loop {
                        pair.wakers.lock().unwrap()[me] = Some(current_waker());
                        if pair.turn.load(Ordering::SeqCst) == round * 2 + me {
                            break;
                        }
                        park();
                    }
                    work(work_nanos);
                    pair.turn.fetch_add(1, Ordering::SeqCst);
                    if let Some(other) = pair.wakers.lock().unwrap()[1 - me].take() {
                        other.wake();
                    }
                }
            })
        })
        .collect();
    tasks.into_iter().for_each(|task| task.join().unwrap());
    let elapsed = start.elapsed();
    report(runtime.sync_domain());
    elapsed
}

fn report(domain: &SyncDomain) {
    if std::env::var_os("SYNC_STATS").is_some()
        && let Some(stats) = domain.stats()
    {
        let t = stats.total;
        eprintln!(
            "  commits {} aborts {} retry waits {} {:?}",
            t.commits,
            t.total_aborts(),
            t.retry_waits,
            t.aborts
        );
    }
}

fn sync_queue(mode: SyncMode) -> Duration {
    const ITEMS: usize = 100_000;
    let domain = SyncDomain::new(mode);
    let queue = Arc::new(SyncQueue::new(&domain));
    let start = Instant::now();
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let queue = queue.clone();
            std::thread::spawn(move || (0..ITEMS).for_each(|n| queue.push(n)))
        })
        .chain((0..2).map(|_| {
            let queue = queue.clone();
            std::thread::spawn(move || {
                (0..ITEMS).for_each(|_| {
                    queue.pop();
                })
            })
        }))
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let elapsed = start.elapsed();
    report(&domain);
    elapsed
}

fn one_thread(mode: SyncMode) -> Duration {
    let queue = SyncQueue::new(&SyncDomain::new(mode));
    let start = Instant::now();
    for n in 0..100_000usize {
        queue.push(n);
        queue.push(n);
        queue.try_pop();
        queue.try_pop();
    }
    start.elapsed()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// A workload: runs once in a mode and returns its wall time.
type Workload = fn(SyncMode) -> Duration;

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    let workloads: [(&str, Workload); 5] = [
        ("one-thread", one_thread),
        ("spawn+yield", spawn_yield),
        ("ping-pong", |mode| ping_pong(mode, 0)),
        ("ping-pong+work", |mode| ping_pong(mode, 2_000)),
        ("sync-queue", sync_queue),
    ];
    println!(
        "{:<15} {:>10} {:>10} {:>8}",
        "workload", "locks", "tm", "tm/locks"
    );
    for (name, run) in workloads {
        let (mut locks, mut tm) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            // Interleaved, so that drifts in machine load hit both.
            locks.push(run(SyncMode::Locks));
            tm.push(run(SyncMode::Transactions));
        }
        let (locks, tm) = (median(locks), median(tm));
        println!(
            "{name:<15} {:>8.1}ms {:>8.1}ms {:>8.2}",
            locks.as_secs_f64() * 1e3,
            tm.as_secs_f64() * 1e3,
            tm.as_secs_f64() / locks.as_secs_f64()
        );
    }
}
