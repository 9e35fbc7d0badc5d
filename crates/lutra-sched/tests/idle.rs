//! Idle workers use no CPU: after a burst of tasks, a runtime with nothing to run
//! sleeps (transactional mode: in the engine's `retry`, parked; lock mode: on a
//! condition variable of its own, with no timed re-check). Alone in its test binary so
//! that the process's CPU time is this runtime's.

use lutra_sched::sync_mode::SyncMode;
use lutra_sched::{Runtime, yield_now};
use std::time::Duration;

const IDLE: Duration = Duration::from_millis(300);
/// Both workers spinning would use 600 ms; parked ones use next to nothing.
const CPU_BUDGET: Duration = Duration::from_millis(15);

/// The CPU time of the whole process (every thread), user and system.
fn process_cpu_time() -> Duration {
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage; RUSAGE_SELF is a constant the
    // kernel knows.
    let status = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(status, 0, "getrusage failed");
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
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
        // Let the workers reach their wait.
        std::thread::sleep(Duration::from_millis(50));
        let before = process_cpu_time();
        std::thread::sleep(IDLE);
        let used = process_cpu_time() - before;
        eprintln!("{mode}: idle workers used {used:?} of CPU over {IDLE:?}");
        assert!(
            used < CPU_BUDGET,
            "{mode}: idle workers used {used:?} of CPU over {IDLE:?}"
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
