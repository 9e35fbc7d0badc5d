//! The runtime: workers (one per core by default, pinned), the run queue, spawning,
//! changing the number of workers, shutting down.
//!
//! The run queue and the live-task count are synchronised as the builder's
//! [`SyncMode`] says (locks, or transactions on the runtime's private engine: see
//! `sync_mode/`).
//!
//! # Invariants
//! - `live` counts tasks spawned and not yet `DONE`; `wait_idle` returns when it is 0.
//! - At most `max_workers` workers run; workers with an index at or above `target`
//!   leave between slices.
//!
//! # Protocol (stopping workers: shutdown, fewer workers)
//! 1. Store the new condition (`shutdown`, or a lower `target`; SeqCst).
//! 2. `queue.wake_all()`: every idle worker re-checks `worker_must_stop` (see
//!    `queue/`: each implementation orders its check after this wake-up).

use crate::carrier::{self, DEFAULT_MAX_BLOCKING_THREADS, Pool};
use crate::context;
use crate::live::LiveTasks;
use crate::native::JoinHandle;
use crate::overflow;
use crate::queue::{RunQueue, Slots};
use crate::shared::Shared;
use crate::sync_mode::{SyncDomain, SyncMode};
use crate::task::{Resumable, TaskCore};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// Default stack size of a native task.
pub const DEFAULT_STACK_SIZE: usize = 256 * 1024;

/// Called after a thread that is no worker (a timer, a host) made a task runnable
/// and queued it for any worker: see [`Builder::on_outside_wake`].
#[derive(Clone)]
pub struct OutsideWake(pub Arc<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for OutsideWake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutsideWake(..)")
    }
}

/// Configures a [`Runtime`].
#[derive(Debug, Clone)]
pub struct Builder {
    workers: Option<usize>,
    allow_more_workers_than_cores: bool,
    pin: bool,
    stack_size: usize,
    sync: SyncMode,
    outside_wake: Option<OutsideWake>,
    max_blocking_threads: usize,
}

impl Builder {
    /// Number of workers (default: one per core). More than the cores are used only
    /// with [`Builder::allow_more_workers_than_cores`].
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = Some(workers.max(1));
        self
    }

    /// Allows more workers than cores (for experiments that compare with plain
    /// threads).
    pub fn allow_more_workers_than_cores(mut self) -> Self {
        self.allow_more_workers_than_cores = true;
        self
    }

    /// Whether to pin worker `i` to core `i mod cores` (default: yes).
    pub fn pin(mut self, pin: bool) -> Self {
        self.pin = pin;
        self
    }

    /// Stack size of native tasks (default [`DEFAULT_STACK_SIZE`]; a guard page below
    /// each stack turns an overflow into a fault, never a silent overwrite).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = bytes;
        self
    }

    /// How the runtime's shared structures (run queue, task count) are synchronised
    /// (default [`SyncMode::Locks`]); client runtimes reach the same choice through
    /// [`Runtime::sync_domain`].
    ///
    /// ```
    /// use lutra_sched::{Runtime, sync_mode::SyncMode};
    /// let runtime = Runtime::builder().workers(2).sync("tm".parse().unwrap()).build();
    /// assert_eq!(runtime.sync_mode(), SyncMode::Transactions);
    /// let squares: Vec<_> = (0..10u64).map(|n| runtime.spawn(move || n * n)).collect();
    /// assert_eq!(squares.into_iter().map(|t| t.join().unwrap()).sum::<u64>(), 285);
    /// ```
    pub fn sync(mut self, mode: SyncMode) -> Self {
        self.sync = mode;
        self
    }

    /// Calls `hook` after every push of an unpinned task made runnable by a thread
    /// that is no worker of this runtime (a timer's, a host's wake-up; a spawn from
    /// outside), once the task is queued: a client that preempts long slices can end
    /// one sooner, so that a busy worker takes the task. `hook` must be cheap and
    /// must not block (it runs on the waking thread).
    pub fn on_outside_wake(mut self, hook: OutsideWake) -> Self {
        self.outside_wake = Some(hook);
        self
    }

    /// The most threads the runtime starts beyond its workers to take over the
    /// worker of a thread blocked inside a call (default
    /// [`DEFAULT_MAX_BLOCKING_THREADS`]; see [`Carrier::retake`](crate::Carrier::retake)).
    /// At the bound, a worker whose thread blocks waits for it, as with 0. Threads
    /// are started only when a call blocks, and wait in a pool for the next one.
    pub fn max_blocking_threads(mut self, threads: usize) -> Self {
        self.max_blocking_threads = threads;
        self
    }

    /// Starts the workers.
    pub fn build(self) -> Runtime {
        overflow::install();
        let cores = core_affinity::get_core_ids().unwrap_or_default();
        let available = thread::available_parallelism().map_or(1, usize::from);
        let workers = self.clamp(self.workers.unwrap_or(available), available);
        let sync = SyncDomain::new(self.sync);
        let shared = Arc::new(Shared {
            queue: RunQueue::new(&sync).on_injected(self.outside_wake.clone()),
            live: LiveTasks::new(&sync),
            sync,
            next_id: AtomicU64::new(1),
            target: AtomicUsize::new(workers),
            shutdown: AtomicBool::new(false),
            switches: AtomicU64::new(0),
            counts: Default::default(),
            pin: self.pin,
            stack_size: self.stack_size,
            cores,
            threads: Mutex::new(Vec::new()),
            seats: Slots::new(),
            pool: Pool::new(self.max_blocking_threads),
            next_carrier: AtomicU64::new(1),
        });
        (0..workers).for_each(|index| carrier::start_for_vacant(&shared, index));
        Runtime {
            shared,
            builder: self,
            available,
        }
    }

    fn clamp(&self, workers: usize, available: usize) -> usize {
        if self.allow_more_workers_than_cores {
            workers.max(1)
        } else {
            workers.clamp(1, available)
        }
    }
}

/// Options of one task: see [`Runtime::task`].
#[derive(Debug, Clone, Default)]
pub struct TaskOptions {
    pub(crate) name: Option<String>,
    pub(crate) home: Option<usize>,
    pub(crate) stack_size: Option<usize>,
}

/// Builds one task: name, pinning, stack size.
#[must_use = "a task builder does nothing until `spawn`"]
pub struct TaskBuilder<'r> {
    runtime: &'r Runtime,
    options: TaskOptions,
}

impl TaskBuilder<'_> {
    /// Names the task (shown in diagnostics).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.options.name = Some(name.into());
        self
    }

    /// Keeps the task on worker `worker` (C tasks must stay where they started: C
    /// compilers cache the addresses of `__thread` variables and `errno`).
    pub fn pinned_to(mut self, worker: usize) -> Self {
        self.options.home = Some(worker);
        self
    }

    /// Sets the task's stack size.
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.options.stack_size = Some(bytes);
        self
    }

    /// Starts the task.
    ///
    /// # Errors
    /// When its stack cannot be allocated.
    pub fn spawn<T: Send + 'static>(
        self,
        body: impl FnOnce() -> T + Send + 'static,
    ) -> std::io::Result<JoinHandle<T>> {
        self.runtime.shared.spawn_task(self.options, body)
    }

    /// Starts a task whose body is resumed slice by slice on the workers' own stacks
    /// (no stack of its own: a Lua process, a state machine). A body that returns
    /// [`Step::Park`](crate::Step::Park) must hand out
    /// [`current_waker`](crate::current_waker) before
    /// checking its condition, and re-check it every time it is resumed (wake-ups may
    /// be spurious; one that arrives between the check and the `Park`, even across a
    /// `Yield` slice in between, makes the `Park` return at once).
    /// Returns the task's record (its id and name); the body reports its own result.
    ///
    /// ```
    /// use lutra_sched::{Resumable, Runtime, Step};
    /// struct Countdown(u32);
    /// impl Resumable for Countdown {
    ///     fn resume(&mut self) -> Step {
    ///         self.0 -= 1;
    ///         if self.0 == 0 { Step::Done } else { Step::Yield }
    ///     }
    /// }
    /// let runtime = Runtime::builder().workers(2).build();
    /// runtime.task().name("countdown").spawn_resumable(Box::new(Countdown(10)));
    /// runtime.wait_idle();
    /// ```
    pub fn spawn_resumable(self, body: Box<dyn Resumable>) -> Arc<TaskCore> {
        self.runtime.shared.spawn_resumable(self.options, body)
    }
}

/// A set of pinned workers running any number of tasks (LUTS's system-level threads
/// and execution contexts).
///
/// ```
/// let runtime = lutra_sched::Runtime::builder().workers(2).build();
/// let tasks: Vec<_> = (0..100u64).map(|n| runtime.spawn(move || n * n)).collect();
/// let sum: u64 = tasks.into_iter().map(|task| task.join().unwrap()).sum();
/// assert_eq!(sum, 328_350);
/// ```
pub struct Runtime {
    shared: Arc<Shared>,
    builder: Builder,
    available: usize,
}

impl Runtime {
    /// A builder with the defaults: one pinned worker per core.
    pub fn builder() -> Builder {
        Builder {
            workers: None,
            allow_more_workers_than_cores: false,
            pin: true,
            stack_size: DEFAULT_STACK_SIZE,
            sync: SyncMode::default(),
            outside_wake: None,
            max_blocking_threads: DEFAULT_MAX_BLOCKING_THREADS,
        }
    }

    /// Spawns a task running `body`.
    ///
    /// # Panics
    /// When the task's stack cannot be allocated (see [`TaskBuilder::spawn`] for the
    /// fallible form).
    pub fn spawn<T: Send + 'static>(
        &self,
        body: impl FnOnce() -> T + Send + 'static,
    ) -> JoinHandle<T> {
        self.task()
            .spawn(body)
            .unwrap_or_else(|error| panic!("cannot allocate a task stack: {error}"))
    }

    /// A builder for a task with a name, pinning or its own stack size.
    pub fn task(&self) -> TaskBuilder<'_> {
        TaskBuilder {
            runtime: self,
            options: TaskOptions::default(),
        }
    }

    /// The number of workers requested.
    pub fn workers(&self) -> usize {
        // ORDERING: a plain read of the requested count, which publishes nothing (Relaxed
        // would do); SeqCst as every other access of `target`.
        self.shared.target.load(Ordering::SeqCst)
    }

    /// Changes the number of workers while tasks run (luaproc's `setnumworkers`). It
    /// never exceeds the cores unless the builder allowed it. Workers above the new
    /// count leave after their current slice; tasks pinned to them wait for a worker
    /// with their index to return.
    pub fn set_workers(&self, workers: usize) {
        let workers = self.builder.clamp(workers, self.available);
        // ORDERING: part of the workers' stop condition (`Shared::worker_must_stop`),
        // stored before the `wake_all` below as the idle protocols require (idle.rs,
        // "Stopping"): pairs with the SeqCst load there.
        let previous = self.shared.target.swap(workers, Ordering::SeqCst);
        let mut threads = self
            .shared
            .threads
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let (gone, kept): (Vec<_>, Vec<_>) = threads
            .drain(..)
            .partition(|(_, handle)| handle.is_finished());
        *threads = kept;
        drop(threads);
        gone.into_iter().for_each(|(_, handle)| {
            let _ = handle.join();
        });
        // ORDERING: the count's SeqCst swap, then each seat's claim (SeqCst): a
        // carrier leaving a seat either is seen vacant here or sees the new count
        // (`seat.rs`).
        (0..workers).for_each(|index| carrier::start_for_vacant(&self.shared, index));
        if workers < previous {
            self.shared.queue.wake_all();
        }
    }

    /// Number of successful LUTS switches so far.
    pub fn switches(&self) -> u64 {
        self.shared.switches.load(Ordering::Relaxed)
    }

    /// Slices run through the direct switch (a task woken by the running task, which
    /// then parked or finished, run next on the same worker without the run queue) so
    /// far. Any time; for tests, which count it to see the direct switch happen.
    #[doc(hidden)]
    pub fn direct_switches(&self) -> u64 {
        self.shared.counts.direct_switches.load(Ordering::Relaxed)
    }

    /// Parked tasks made runnable by a waker so far (wake-ups that found the task
    /// already runnable are not counted). Any time; for tests, which count the tasks a
    /// message woke.
    #[doc(hidden)]
    pub fn unparks(&self) -> u64 {
        self.shared.counts.unparks.load(Ordering::Relaxed)
    }

    /// Seats retaken from threads blocked inside a call so far
    /// ([`Carrier::retake`](crate::Carrier::retake)). Any time; for tests and
    /// statistics.
    pub fn blocking_handoffs(&self) -> u64 {
        self.shared.pool.retakes.load(Ordering::Relaxed)
    }

    /// Threads started beyond the workers, for blocked calls, so far. Any time; for
    /// tests and statistics.
    pub fn blocking_threads_started(&self) -> u64 {
        self.shared.pool.spares_started.load(Ordering::Relaxed)
    }

    /// Threads waiting in the pool for the next blocked call now. Any time; for tests,
    /// which wait for a thread that lost its worker to reach the pool.
    #[doc(hidden)]
    pub fn blocking_threads_parked(&self) -> usize {
        self.shared.pool.parked()
    }

    /// How the runtime's shared structures are synchronised.
    pub fn sync_mode(&self) -> SyncMode {
        self.shared.sync.mode()
    }

    /// The runtime's synchronisation domain: build client structures
    /// ([`SyncCell`](crate::sync_mode::SyncCell), [`SyncQueue`](crate::sync_mode::SyncQueue)) in
    /// it so they follow the same `--sync` choice, and read its statistics (in
    /// [`SyncMode::Transactions`]: the private engine's commits and aborts, the run
    /// queue's under [`SITE_RUN_QUEUE`](crate::sync_mode::SITE_RUN_QUEUE)).
    ///
    /// ```
    /// use lutra_sched::{Runtime, sync_mode::{SyncCell, SyncMode}};
    /// let runtime = Runtime::builder().workers(1).sync(SyncMode::Transactions).build();
    /// let channels = SyncCell::new(runtime.sync_domain(), 0u32);
    /// channels.update(|n| *n += 1);
    /// runtime.spawn(|| ()).join().unwrap();
    /// let stats = runtime.sync_domain().stats().unwrap();
    /// assert!(stats.by_site[&lutra_sched::sync_mode::SITE_RUN_QUEUE].commits >= 2);
    /// ```
    pub fn sync_domain(&self) -> &SyncDomain {
        &self.shared.sync
    }

    /// Waits until every task spawned so far has finished (blocks the current thread).
    pub fn wait_idle(&self) {
        self.shared.live.wait_idle();
    }

    /// Waits for every task, then stops the workers (also done on drop).
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if context::worker_index().is_none() {
            self.wait_idle();
        }
        // ORDERING: the stop condition, stored before `wake_all` (idle.rs and
        // transactional.rs, "Stopping"): pairs with the SeqCst load in
        // `Shared::worker_must_stop`, which a worker makes after registering as a sleeper.
        self.shared.shutdown.store(true, Ordering::SeqCst);
        self.shared.queue.wake_all();
        self.shared.pool.shut_down();
        let threads = std::mem::take(
            &mut *self
                .shared
                .threads
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        let me = std::thread::current().id();
        for (_, handle) in threads {
            // Dropped by one of its own tasks, the runtime cannot join the worker that
            // runs it: that worker leaves by itself once the task returns (it sees
            // `shutdown`), detached.
            if handle.thread().id() != me {
                let _ = handle.join();
            }
        }
    }
}

/// Spawns a task on the runtime of the current worker.
///
/// # Panics
/// Outside a worker of a runtime, or when the task's stack cannot be allocated.
pub fn spawn<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
    let shared = context::runtime().expect("lutra_sched::spawn called outside a runtime's worker");
    shared
        .spawn_task(TaskOptions::default(), body)
        .unwrap_or_else(|error| panic!("cannot allocate a task stack: {error}"))
}
