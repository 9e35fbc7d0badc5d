//! Runs on the scheduler's tasks beside runs on OS threads, behind one type
//! ([`Runner`]), so that the oversubscription benchmark measures both with the same
//! workload code and the same loop: only where the loop runs differs.
//!
//! | runner | what runs the loop | between operations |
//! |--------|--------------------|--------------------|
//! | [`Runner::Threads`] | one OS thread per count (the kernel preempts them anywhere, inside transactions too) | nothing |
//! | [`Runner::Tasks`] | one task per count on a [`Runtime`] (one worker per core) | `yield_now` every `yield_every` operations |
//!
//! # Protocol (one run)
//! 1. The coordinator (the calling thread, never a task) starts the threads or
//!    spawns the tasks. Each builds its own state (`init`), then waits at a barrier of
//!    count + 1 parties ([`lutra_sched::Barrier`]: a waiting task parks and frees its
//!    worker for the others; a thread parks).
//! 2. Past the barrier, each notes its start time and runs operations, counting them:
//!    until the stop flag is raised, at least one ([`Runner::timed`]), or for a fixed number of steps
//!    ([`Runner::scripted`]); then it notes its end time.
//! 3. A task yields after every `yield_every` operations. The scheduler is
//!    cooperative: a task that never yields keeps its worker until it finishes, and
//!    with more tasks than workers the others starve (they would not even see the
//!    stop flag). Yields fall between operations, never inside a transaction: a task
//!    gives up its worker inside a transaction only when the engine or a policy
//!    decides (a wait, a `retry`, a policy's switch before an attempt).
//! 4. [`Runner::timed`]: the coordinator passes the barrier, sleeps for the duration,
//!    raises the flag; [`Runner::scripted`]: it passes the barrier. It then joins
//!    every thread or task (a panic is propagated).
//! 5. The elapsed time runs from the earliest start to the latest end, as in
//!    `measure.rs`: it covers every counted operation, whenever the coordinator got
//!    a processor.
//!
//! # Yield interval
//! [`DEFAULT_YIELD_EVERY`] = 8 operations. A yield is a round trip through the
//! scheduler's shared run queue (its lock, two context switches): about 0.3–0.7 µs
//! per yield on the 2-core development machine, as much as one or two bank
//! transfers. Yielding after every operation would measure the queue more than the
//! workload; every 8 adds about 60 ns per operation, while every task still gets a
//! turn every few microseconds. The benchmark's `--yield-every` changes it (1 yields
//! after every operation); scripted runs always yield after every transaction.

use crate::harness::measure::Run;
use lutra_sched::{Barrier, Runtime};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Operations a task runs between two yields, by default (see the module header).
pub const DEFAULT_YIELD_EVERY: u32 = 8;

/// Where the operations of a run execute.
#[derive(Clone, Copy)]
pub enum Runner<'r> {
    /// One OS thread per count.
    Threads,
    /// One task per count on `runtime`, yielding every `yield_every` operations
    /// (at least 1).
    Tasks {
        /// The workers the tasks run on.
        runtime: &'r Runtime,
        /// Operations between two yields.
        yield_every: u32,
    },
}

impl std::fmt::Debug for Runner<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Threads => f.write_str("Threads"),
            Self::Tasks {
                runtime,
                yield_every,
            } => f
                .debug_struct("Tasks")
                .field("workers", &runtime.workers())
                .field("yield_every", yield_every)
                .finish(),
        }
    }
}

/// What one thread or task did.
#[derive(Clone, Copy, Debug)]
struct Tally {
    ops: u64,
    start: Instant,
    end: Instant,
}

/// The loop one thread or task runs, past the state it builds (type-erased).
type Work = Arc<dyn Fn(usize, &Barrier) -> Tally + Send + Sync>;

impl Runner<'_> {
    /// Runs `op` on `count` threads or tasks for about `duration` (see the module
    /// protocol). Each builds its state with `init(index)`; `op` is one operation.
    ///
    /// # Panics
    /// If an operation panics (the panic is propagated), or `count` is 0.
    pub fn timed<S: 'static>(
        &self,
        count: usize,
        duration: Duration,
        init: impl Fn(usize) -> S + Send + Sync + 'static,
        op: impl Fn(&mut S) + Send + Sync + 'static,
    ) -> Run {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let pause = self.pause();
        let work: Work = Arc::new(move |index, barrier: &Barrier| {
            let mut state = init(index);
            barrier.wait();
            let start = Instant::now();
            let mut ops = 0u64;
            // At least one operation per thread or task, however late it first runs
            // on a loaded machine.
            loop {
                op(&mut state);
                ops += 1;
                pause.after(ops);
                // ORDERING: the flag carries no data; Relaxed only bounds how late an
                // operation loop notices it.
                if flag.load(Ordering::Relaxed) {
                    break;
                }
            }
            Tally {
                ops,
                start,
                end: Instant::now(),
            }
        });
        self.launch(count, work, || {
            std::thread::sleep(duration);
            stop.store(true, Ordering::Relaxed);
        })
    }

    /// Runs `steps` operations on each of `count` threads or tasks (see the module
    /// protocol): thread or task `index` builds its state with `init(index)`, then
    /// calls `op(state, step)` for each step in order. The run's `ops` is
    /// `count × steps`.
    ///
    /// # Panics
    /// If an operation panics (the panic is propagated), or `count` is 0.
    pub fn scripted<S: 'static>(
        &self,
        count: usize,
        steps: u64,
        init: impl Fn(usize) -> S + Send + Sync + 'static,
        op: impl Fn(&mut S, u64) + Send + Sync + 'static,
    ) -> Run {
        let pause = self.pause();
        let work: Work = Arc::new(move |index, barrier: &Barrier| {
            let mut state = init(index);
            barrier.wait();
            let start = Instant::now();
            for step in 0..steps {
                op(&mut state, step);
                pause.after(step + 1);
            }
            Tally {
                ops: steps,
                start,
                end: Instant::now(),
            }
        });
        self.launch(count, work, || {})
    }

    fn pause(&self) -> Pause {
        match self {
            Self::Threads => Pause(None),
            Self::Tasks { yield_every, .. } => Pause(Some(u64::from((*yield_every).max(1)))),
        }
    }

    /// Starts `work` on `count` threads or tasks, opens the barrier, runs
    /// `while_running` on the coordinator, joins, and sums up (protocol steps 1, 4, 5).
    fn launch(&self, count: usize, work: Work, while_running: impl FnOnce()) -> Run {
        assert!(count > 0, "a run needs at least one thread or task");
        let barrier = Arc::new(Barrier::new(count + 1));
        let joins: Vec<Join> = (0..count)
            .map(|index| {
                let (work, barrier) = (work.clone(), barrier.clone());
                let body = move || work(index, &barrier);
                match self {
                    Self::Threads => Join::Thread(std::thread::spawn(body)),
                    Self::Tasks { runtime, .. } => Join::Task(runtime.spawn(body)),
                }
            })
            .collect();
        barrier.wait();
        while_running();
        let tallies: Vec<Tally> = joins.into_iter().map(Join::join).collect();
        let first = tallies.iter().map(|tally| tally.start).min();
        let last = tallies.iter().map(|tally| tally.end).max();
        Run {
            ops: tallies.iter().map(|tally| tally.ops).sum(),
            elapsed: last
                .zip(first)
                .map_or(Duration::ZERO, |(last, first)| last - first),
        }
    }
}

/// Yields the task after every `n` operations (`Some(n)`), or never (threads).
#[derive(Clone, Copy, Debug)]
struct Pause(Option<u64>);

impl Pause {
    /// Called after operation number `done` (counting from 1).
    fn after(self, done: u64) {
        if let Some(every) = self.0
            && done.is_multiple_of(every)
        {
            lutra_sched::yield_now();
        }
    }
}

/// A started thread or task.
enum Join {
    Thread(std::thread::JoinHandle<Tally>),
    Task(lutra_sched::JoinHandle<Tally>),
}

impl Join {
    /// Its tally; propagates its panic.
    fn join(self) -> Tally {
        let result = match self {
            Self::Thread(handle) => handle.join(),
            Self::Task(handle) => handle.join(),
        };
        result.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn tasks_count_every_operation_and_stop() {
        let runtime = Runtime::builder().workers(2).build();
        let counted = Arc::new(AtomicU64::new(0));
        let seen = counted.clone();
        let runner = Runner::Tasks {
            runtime: &runtime,
            yield_every: 1,
        };
        // 16 tasks on 2 workers, none of which ever blocks: only the yields let them
        // share the workers (`every_task_gets_turns` checks that each one ran).
        let run = runner.timed(
            16,
            Duration::from_millis(30),
            |index| index,
            move |_| {
                seen.fetch_add(1, Ordering::Relaxed);
            },
        );
        assert_eq!(run.ops, counted.load(Ordering::Relaxed));
        assert!(run.ops >= 16, "{run:?}");
        assert!(run.elapsed >= Duration::from_millis(25), "{run:?}");
    }

    #[test]
    fn every_task_gets_turns() {
        let runtime = Runtime::builder().workers(2).build();
        let per_task: Arc<Vec<AtomicU64>> = Arc::new((0..8).map(|_| AtomicU64::new(0)).collect());
        let counts = per_task.clone();
        let runner = Runner::Tasks {
            runtime: &runtime,
            yield_every: 4,
        };
        runner.timed(
            8,
            Duration::from_millis(30),
            |index| index,
            move |index| {
                counts[*index].fetch_add(1, Ordering::Relaxed);
            },
        );
        assert!(
            per_task
                .iter()
                .all(|count| count.load(Ordering::Relaxed) > 0),
            "{per_task:?}"
        );
    }

    #[test]
    fn scripted_runs_run_every_step_once() {
        let runtime = Runtime::builder().workers(2).build();
        for runner in [
            Runner::Threads,
            Runner::Tasks {
                runtime: &runtime,
                yield_every: 1,
            },
        ] {
            let sum = Arc::new(AtomicU64::new(0));
            let total = sum.clone();
            let run = runner.scripted(
                5,
                100,
                |index| index as u64,
                move |index, step| {
                    total.fetch_add(*index * 1000 + step, Ordering::Relaxed);
                },
            );
            assert_eq!(run.ops, 500, "{runner:?}");
            // Σ over 5 tasks of (100 · 1000 · index + Σ steps) = 1000·100·10 + 5·4950.
            assert_eq!(
                sum.load(Ordering::Relaxed),
                1_000_000 + 24_750,
                "{runner:?}"
            );
        }
    }

    #[test]
    fn threads_run_like_tasks() {
        let run = Runner::Threads.timed(3, Duration::from_millis(20), |_| (), |_| {});
        assert!(run.ops > 0);
        assert!(run.elapsed >= Duration::from_millis(15), "{run:?}");
    }
}
