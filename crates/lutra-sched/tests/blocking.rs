//! Retaking the worker of a thread blocked inside a call (`seat.rs`, `carrier.rs`),
//! through the public monitor API ([`lutra_sched::Carrier`]), in both sync modes.
//!
//! With one worker, a task blocks its OS thread on a standard channel that only a
//! second task can fill: the second task can run only on a thread that took the
//! worker over. The test plays the monitor: it observes the blocked task's carrier
//! (the task hands its carrier out from inside its slice, so it provably is in that
//! slice) and retakes it. Nothing depends on timing: without the hand-off the second
//! task never runs, and `within` turns the hang into a failure.

use lutra_sched::sync_mode::SyncMode;
use lutra_sched::{Runtime, current_carrier};
use std::sync::mpsc;
use std::time::Duration;

mod common;
use common::within;

fn blocked_task_hands_its_worker_over(mode: SyncMode) {
    let runtime = Runtime::builder().workers(1).sync(mode).build();
    let (carrier_out, carrier_in) = mpsc::channel();
    let (unblock, unblocked) = mpsc::channel::<u32>();
    let blocked = runtime.spawn(move || {
        carrier_out
            .send(current_carrier().expect("a task runs on a worker"))
            .unwrap();
        // Blocks this OS thread (not the task): only another task sends.
        unblocked.recv().unwrap() + 1
    });
    let carrier = carrier_in.recv().unwrap();
    let observed = carrier.observe().expect("the task is inside its slice");
    assert!(
        carrier.retake(observed),
        "{mode:?}: the seat was not retaken"
    );
    assert!(
        !carrier.retake(observed),
        "{mode:?}: a seat is retaken once per slice"
    );
    let other = runtime.spawn(move || unblock.send(41).is_ok());
    assert!(other.join().unwrap(), "{mode:?}");
    assert_eq!(blocked.join().unwrap(), 42, "{mode:?}");
    assert_eq!(runtime.blocking_handoffs(), 1, "{mode:?}");
    assert_eq!(runtime.blocking_threads_started(), 1, "{mode:?}");
    // The blocked thread goes back to the pool (waited for: its task finished before
    // its slice ended), and the next retake reuses it (no thread is started).
    while runtime.blocking_threads_parked() == 0 {
        std::thread::yield_now();
    }
    let (carrier_out, carrier_in) = mpsc::channel();
    let (unblock, unblocked) = mpsc::channel::<u32>();
    let blocked = runtime.spawn(move || {
        carrier_out.send(current_carrier().unwrap()).unwrap();
        unblocked.recv().unwrap()
    });
    let carrier = carrier_in.recv().unwrap();
    assert!(carrier.retake(carrier.observe().unwrap()), "{mode:?}");
    let other = runtime.spawn(move || unblock.send(7).is_ok());
    assert!(other.join().unwrap());
    assert_eq!(blocked.join().unwrap(), 7);
    assert_eq!(runtime.blocking_handoffs(), 2, "{mode:?}");
    assert_eq!(
        runtime.blocking_threads_started(),
        1,
        "{mode:?}: the pool's thread is reused"
    );
}

#[test]
fn a_blocked_task_hands_its_worker_over_under_locks() {
    within(Duration::from_secs(60), "the hand-off (locks)", || {
        blocked_task_hands_its_worker_over(SyncMode::Locks)
    });
}

#[test]
fn a_blocked_task_hands_its_worker_over_under_transactions() {
    within(Duration::from_secs(60), "the hand-off (tm)", || {
        blocked_task_hands_its_worker_over(SyncMode::Transactions)
    });
}

/// At the bound (`max_blocking_threads(0)`), a retake is refused and the blocked
/// thread keeps its worker.
#[test]
fn at_the_bound_no_seat_is_retaken() {
    within(Duration::from_secs(60), "the refused retake", || {
        let runtime = Runtime::builder()
            .workers(1)
            .max_blocking_threads(0)
            .build();
        let (carrier_out, carrier_in) = mpsc::channel();
        let (unblock, unblocked) = mpsc::channel::<()>();
        let blocked = runtime.spawn(move || {
            carrier_out.send(current_carrier().unwrap()).unwrap();
            unblocked.recv().unwrap();
        });
        let carrier = carrier_in.recv().unwrap();
        assert!(!carrier.retake(carrier.observe().unwrap()));
        assert_eq!(runtime.blocking_threads_started(), 0);
        unblock.send(()).unwrap();
        blocked.join().unwrap();
    });
}
