//! The per-worker run queues under load, in both sync modes:
//!
//! - nothing is lost: with many more tasks than workers (spawned from a thread into
//!   the global queue and from tasks into workers' own queues, some pinned), every
//!   task runs exactly once, and a chain of wake-ups passed from task to task (each
//!   task parks until the previous one wakes it) reaches its end; rounds are separated
//!   by idle periods, so workers go to sleep and must be woken by the next round;
//! - pinned tasks never move: tasks pinned to one worker run only there, while the
//!   other workers are idle (and would steal anything they were allowed to).
//!
//! Nothing here depends on timing: a lost task or wake-up hangs, and `within` turns a
//! hang into a failure.

use lutra_sched::sync_mode::SyncMode;
use lutra_sched::{JoinHandle, Runtime, current_waker, park, worker_index, yield_now};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::Duration;

mod common;
use common::within;

/// A chain of wake-ups: link `i` waits (parked) until link `i − 1` passes it on.
struct Chain {
    tokens: Vec<AtomicBool>,
    wakers: Vec<Mutex<Option<Waker>>>,
    woken: AtomicUsize,
}

impl Chain {
    fn new(links: usize) -> Arc<Self> {
        Arc::new(Self {
            tokens: (0..links).map(|_| AtomicBool::new(false)).collect(),
            wakers: (0..links).map(|_| Mutex::new(None)).collect(),
            woken: AtomicUsize::new(0),
        })
    }

    /// Parks until link `at` holds the token (no lost wake-up: the waker is stored
    /// before the token is checked, and passed on after the token is set).
    fn wait(&self, at: usize, check: impl Fn()) {
        loop {
            *self.wakers[at].lock().unwrap() = Some(current_waker());
            if self.tokens[at].load(Ordering::SeqCst) {
                break;
            }
            park();
            check();
        }
        self.woken.fetch_add(1, Ordering::SeqCst);
    }

    /// Gives link `at` the token and wakes it.
    fn pass(&self, at: usize) {
        if at == self.tokens.len() {
            return;
        }
        self.tokens[at].store(true, Ordering::SeqCst);
        if let Some(waker) = self.wakers[at].lock().unwrap().take() {
            waker.wake();
        }
    }
}

const WORKERS: usize = 4;
const TASKS: usize = 1_000;
const ROUNDS: usize = 3;

/// One task of a round: counted, yields, waits for its link of the chain, passes it
/// on; a pinned one checks its worker after every suspension.
fn link(
    at: usize,
    home: Option<usize>,
    runs: Arc<Vec<AtomicUsize>>,
    chain: Arc<Chain>,
) -> impl FnOnce() + Send + 'static {
    move || {
        let check = || {
            if let Some(home) = home {
                assert_eq!(worker_index(), Some(home), "pinned task {at} moved");
            }
        };
        runs[at].fetch_add(1, Ordering::SeqCst);
        check();
        for _ in 0..3 {
            yield_now();
            check();
        }
        chain.wait(at, check);
        chain.pass(at + 1);
    }
}

fn home_of(at: usize) -> Option<usize> {
    at.is_multiple_of(5).then_some(at % WORKERS)
}

/// Spawns link `at` (pinned to its home, if it has one) from the calling thread or
/// task.
fn spawn_link(
    runtime: &Arc<Runtime>,
    at: usize,
    runs: &Arc<Vec<AtomicUsize>>,
    chain: &Arc<Chain>,
) -> JoinHandle<()> {
    let task = runtime.task();
    let task = match home_of(at) {
        Some(home) => task.pinned_to(home),
        None => task,
    };
    task.spawn(link(at, home_of(at), runs.clone(), chain.clone()))
        .unwrap()
}

fn round(runtime: &Arc<Runtime>) {
    let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..TASKS).map(|_| AtomicUsize::new(0)).collect());
    let chain = Chain::new(TASKS);
    // The first half from this thread (the global queue; pinned ones to their
    // worker's queue)...
    let mut handles: Vec<JoinHandle<()>> = (0..TASKS / 2)
        .map(|at| spawn_link(runtime, at, &runs, &chain))
        .collect();
    // ... the second half from a task (its worker's own queue).
    let spawner = {
        let (runs, chain, runtime) = (runs.clone(), chain.clone(), runtime.clone());
        runtime.clone().spawn(move || {
            (TASKS / 2..TASKS)
                .map(|at| spawn_link(&runtime, at, &runs, &chain))
                .collect::<Vec<_>>()
        })
    };
    handles.extend(spawner.join().unwrap());
    chain.pass(0);
    handles.into_iter().for_each(|task| task.join().unwrap());
    assert!(
        runs.iter().all(|runs| runs.load(Ordering::SeqCst) == 1),
        "a task ran twice or never"
    );
    assert_eq!(
        chain.woken.load(Ordering::SeqCst),
        TASKS,
        "a wake-up was lost"
    );
    // Let every worker run out of work: the next round must wake them.
    runtime.wait_idle();
}

#[test]
fn every_task_runs_once_and_every_wake_up_arrives() {
    for mode in SyncMode::ALL {
        within(Duration::from_secs(120), "the stress rounds", move || {
            let runtime = Arc::new(
                Runtime::builder()
                    .workers(WORKERS)
                    .allow_more_workers_than_cores()
                    .stack_size(64 * 1024)
                    .sync(mode)
                    .build(),
            );
            (0..ROUNDS).for_each(|_| round(&runtime));
        });
    }
}

#[test]
fn pinned_tasks_run_only_on_their_worker_while_others_idle() {
    for mode in SyncMode::ALL {
        within(Duration::from_secs(60), "the pinned tasks", move || {
            let runtime = Runtime::builder()
                .workers(3)
                .allow_more_workers_than_cores()
                .sync(mode)
                .build();
            let chain = Chain::new(64);
            let tasks: Vec<_> = (0..64)
                .map(|at| {
                    let chain = chain.clone();
                    runtime
                        .task()
                        .pinned_to(2)
                        .spawn(move || {
                            let check = || assert_eq!(worker_index(), Some(2), "task {at} moved");
                            for _ in 0..100 {
                                check();
                                yield_now();
                            }
                            check();
                            chain.wait(at, check);
                            chain.pass(at + 1);
                            // Unpinned work queued by a pinned task: the idle workers
                            // may steal it, but never the pinned tasks beside it.
                            lutra_sched::spawn(yield_now).join().unwrap();
                            check();
                        })
                        .unwrap()
                })
                .collect();
            chain.pass(0);
            tasks.into_iter().for_each(|task| task.join().unwrap());
        });
    }
}
