//! Idle workers use no CPU: after a burst of tasks, a runtime with nothing to run
//! sleeps (transactional mode: in the engine's `retry`, parked; lock mode: on a
//! condition variable of its own, with no timed re-check). The test waits until the
//! kernel reports every worker thread asleep (a handshake, not a sleep), then checks
//! that none of them is switched in over an idle window: its context switch counts
//! stay the same, whatever the machine's speed or load. Alone in its test binary so
//! that the worker threads are this runtime's.

use lutra_sched::sync_mode::SyncMode;
use lutra_sched::{Runtime, yield_now};
use std::time::{Duration, Instant};

/// How long the workers are left idle: a sleeping worker must not wake however long
/// that is (the test counts its context switches, so it does not depend on the
/// machine's speed).
const IDLE: Duration = Duration::from_millis(300);
/// Idle windows tried: a worker may still be on its way to its final wait (a mutex
/// on the way counts a switch) in the first window.
const WINDOWS: usize = 3;

/// The kernel's view of one worker thread: its state letter (`S` asleep, `R`
/// running) and its context switches so far (voluntary and not). A thread that
/// stays asleep keeps the same count.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    state: char,
    switches: u64,
}

/// The runtime's worker threads (named `lutra-worker-N`), by thread id.
fn worker_threads() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .expect("read /proc/self/task")
        .filter_map(|entry| {
            let tid = entry.ok()?.file_name().into_string().ok()?;
            let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok()?;
            comm.starts_with("lutra-worker-").then_some(tid)
        })
        .collect()
}

fn seen(tid: &str) -> Seen {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).expect("stat");
    let after_name = &stat[stat.rfind(')').expect("a stat line") + 2..];
    let state = after_name.chars().next().expect("a state letter");
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).expect("status");
    let switches = status
        .lines()
        .filter(|line| line.contains("ctxt_switches:"))
        .map(|line| {
            let count = line.split_whitespace().last().expect("a count");
            count.parse::<u64>().expect("a number")
        })
        .sum();
    Seen { state, switches }
}

/// Waits until exactly `count` worker threads exist (a worker may still be starting,
/// and the previous runtime's may still be leaving); returns them.
fn all_workers_started(count: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let workers = worker_threads();
        if workers.len() == count {
            return workers;
        }
        assert!(Instant::now() < deadline, "worker threads {workers:?}");
        std::thread::yield_now();
    }
}

/// Handshake: waits until every worker thread is asleep in the kernel at once;
/// returns what was seen. Fails after a minute (a spinning worker never sleeps).
fn all_asleep(workers: &[String]) -> Vec<Seen> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now: Vec<Seen> = workers.iter().map(|tid| seen(tid)).collect();
        if now.iter().all(|seen| seen.state == 'S') {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "workers never all asleep: {now:?}"
        );
        std::thread::yield_now();
    }
}

#[test]
fn idle_workers_use_no_cpu() {
    for mode in SyncMode::ALL {
        let runtime = Runtime::builder().workers(2).sync(mode).build();
        let tasks: Vec<_> = (0..100)
            .map(|_| runtime.spawn(|| (0..10).for_each(|_| yield_now())))
            .collect();
        tasks.into_iter().for_each(|task| task.join().unwrap());
        runtime.wait_idle();
        let workers = all_workers_started(2);
        // A window passes when the workers were asleep at its start and nothing woke
        // them before its end: the same context switch counts, still asleep.
        let quiet = (0..WINDOWS).any(|_| {
            let before = all_asleep(&workers);
            // The sleep is the thing under test: idle workers stay asleep.
            std::thread::sleep(IDLE);
            let after: Vec<Seen> = workers.iter().map(|tid| seen(tid)).collect();
            eprintln!("{mode}: over {IDLE:?} idle workers went from {before:?} to {after:?}");
            before == after
        });
        assert!(
            quiet,
            "{mode}: idle workers woke during every {IDLE:?} window (a timed re-check or a spin)"
        );
        if mode == SyncMode::Transactions {
            let stats = runtime.sync_domain().stats().unwrap();
            assert!(
                stats.total.retry_waits > 0,
                "no worker ever waited in retry"
            );
        }
        // The idle workers still wake for new work.
        assert_eq!(runtime.spawn(|| 5).join().unwrap(), 5);
    }
}
