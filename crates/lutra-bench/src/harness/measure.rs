//! Fixed-duration runs on many threads, and what a measurement reports ([`Sample`]).
//!
//! # Protocol
//! 1. Each thread builds its own state (`init`), then waits at a barrier.
//! 2. Past the barrier, each thread notes its start time and runs operations, at
//!    least one, until the stop flag is raised, counting them, then notes its end time.
//! 3. The coordinator passes the barrier, sleeps for the duration, raises the flag and
//!    joins every thread.
//! 4. The elapsed time runs from the earliest start to the latest end: it covers every
//!    counted operation, whenever the coordinator itself got a processor (with many
//!    more threads than cores it may be scheduled long after the workers started, or
//!    raise the flag late; the workers' own clocks are what counts).

use lutra_stm::Counters;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The outcome of one timed run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Run {
    /// Operations completed by all threads.
    pub ops: u64,
    /// From the start signal until the last thread stopped.
    pub elapsed: Duration,
}

impl Run {
    /// Operations per second.
    pub fn throughput(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Runs `op` on `threads` threads for about `duration` (see the module protocol).
/// Thread `i` builds its state with `init(i)`; `op` is one operation.
///
/// # Panics
/// If a thread panics (the panic is propagated), or `threads` is 0.
pub fn timed<S>(
    threads: usize,
    duration: Duration,
    init: impl Fn(usize) -> S + Sync,
    op: impl Fn(&mut S) + Sync,
) -> Run {
    assert!(threads > 0, "a run needs at least one thread");
    let barrier = Barrier::new(threads + 1);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|index| {
                let (barrier, stop, init, op) = (&barrier, &stop, &init, &op);
                scope.spawn(move || {
                    let mut state = init(index);
                    barrier.wait();
                    let start = Instant::now();
                    let mut ops = 0u64;
                    // At least one operation per thread, however late the thread
                    // first runs on a loaded machine.
                    loop {
                        op(&mut state);
                        ops += 1;
                        // ORDERING: the flag carries no data; Relaxed only bounds how
                        // late a thread notices it.
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                    }
                    (ops, start, Instant::now())
                })
            })
            .collect();
        barrier.wait();
        std::thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
        let results: Vec<(u64, Instant, Instant)> = workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect();
        let first = results.iter().map(|&(_, start, _)| start).min();
        let last = results.iter().map(|&(_, _, end)| end).max();
        Run {
            ops: results.iter().map(|&(ops, _, _)| ops).sum(),
            elapsed: last
                .zip(first)
                .map_or(Duration::ZERO, |(last, first)| last - first),
        }
    })
}

/// The outcome of measuring one contender at one thread count.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sample {
    /// Operations and time.
    pub run: Run,
    /// The engine's counters for the measured operations (STM contenders only).
    pub stats: Option<Counters>,
    /// Checked after the run: the number of keys left (intset), the conserved total
    /// (bank).
    pub final_total: Option<i64>,
}

/// `after - before`, counter by counter (`max_retries` is `after`'s).
pub fn counters_since(after: &Counters, before: &Counters) -> Counters {
    let mut aborts = after.aborts;
    for (count, earlier) in aborts.iter_mut().zip(before.aborts) {
        *count -= earlier;
    }
    Counters {
        starts: after.starts - before.starts,
        commits: after.commits - before.commits,
        aborts,
        retry_waits: after.retry_waits - before.retry_waits,
        irrevocable_commits: after.irrevocable_commits - before.irrevocable_commits,
        max_retries: after.max_retries,
        wasted: after.wasted.saturating_sub(before.wasted),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_operation_of_every_thread() {
        let run = timed(
            3,
            Duration::from_millis(20),
            |index| index,
            |_| std::hint::spin_loop(),
        );
        assert!(run.ops > 0);
        assert!(run.elapsed >= Duration::from_millis(15), "{run:?}");
        assert!(run.throughput() > 0.0);
    }
}
