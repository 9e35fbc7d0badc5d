//! The state every worker and task of one runtime shares: the run queue, the
//! live-task count, the worker target and shutdown flag, and the worker threads. The
//! `Runtime` handle (`runtime.rs`), the workers (`worker.rs`) and the wakers
//! (`suspend.rs`) all reach it through an `Arc`.
//!
//! # Invariants
//! - `live` counts tasks spawned and not yet `DONE`.
//! - Workers with an index at or above `target` leave between slices; after
//!   `shutdown` every worker leaves.
//! - Worker `i` is run by whichever carrier thread holds seat `i` (`seat.rs`,
//!   `carrier.rs`): one, except while a carrier that lost the seat in a blocked
//!   call ends its slice.

use crate::carrier::Pool;
use crate::context;
use crate::live::LiveTasks;
use crate::native::{JoinHandle, JoinState, NativeTask};
use crate::queue::{RunQueue, Slots};
use crate::runtime::TaskOptions;
use crate::seat::Seat;
use crate::sync_mode::SyncDomain;
use crate::task::{Resumable, Step, TaskCore};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// Counts of scheduler events that tests read to see a feature at work. On a cache
/// line of their own: workers bump them, and must not invalidate the line of `target`
/// and `shutdown`, which every worker reads between slices.
#[derive(Default)]
#[repr(align(128))]
pub(crate) struct EventCounts {
    /// Slices run from the direct switch's slot (`worker.rs`).
    pub(crate) direct_switches: AtomicU64,
    /// Parked tasks made runnable by a waker (`suspend.rs`).
    pub(crate) unparks: AtomicU64,
}

pub(crate) struct Shared {
    pub(crate) queue: RunQueue,
    pub(crate) sync: SyncDomain,
    pub(crate) next_id: AtomicU64,
    pub(crate) live: LiveTasks,
    pub(crate) target: AtomicUsize,
    pub(crate) shutdown: AtomicBool,
    pub(crate) switches: AtomicU64,
    pub(crate) counts: EventCounts,
    pub(crate) pin: bool,
    pub(crate) stack_size: usize,
    pub(crate) cores: Vec<core_affinity::CoreId>,
    /// Every carrier thread started (with the seat it started on), joined on drop.
    pub(crate) threads: Mutex<Vec<(usize, thread::JoinHandle<()>)>>,
    /// The workers' seats (`seat.rs`).
    pub(crate) seats: Slots<Seat>,
    /// The spare carriers (`carrier.rs`).
    pub(crate) pool: Pool,
    /// The next carrier's id.
    pub(crate) next_carrier: AtomicU64,
}

impl Shared {
    pub(crate) fn worker_must_stop(&self, index: usize) -> bool {
        // ORDERING: the stop condition, read by the queues' idle protocols after a worker
        // registers as a sleeper; pairs with the SeqCst store of `shutdown` (`Runtime`'s
        // drop) and swap of `target` (`set_workers`), each made before `wake_all` (idle.rs
        // and transactional.rs, "Stopping").
        self.shutdown.load(Ordering::SeqCst) || index >= self.target.load(Ordering::SeqCst)
    }

    pub(crate) fn task_finished(&self) {
        self.live.remove();
    }

    pub(crate) fn count_switch(&self) {
        self.switches.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_direct_switch(&self) {
        self.counts.direct_switches.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_unpark(&self) {
        self.counts.unparks.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn spawn_resumable(
        self: &Arc<Self>,
        options: TaskOptions,
        body: Box<dyn Resumable>,
    ) -> Arc<TaskCore> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let core = Arc::new(TaskCore::new(id, options.home, options.name));
        let body = ResumedTask {
            core: core.clone(),
            body,
            parked_last: false,
        };
        self.enqueue_new(core.clone(), Box::new(body));
        core
    }

    fn enqueue_new(&self, core: Arc<TaskCore>, body: Box<dyn Resumable>) {
        *core.body.lock() = Some(body);
        self.live.add();
        self.queue.push(core, context::worker_of(self));
    }

    pub(crate) fn spawn_task<T: Send + 'static>(
        self: &Arc<Self>,
        options: TaskOptions,
        body: impl FnOnce() -> T + Send + 'static,
    ) -> std::io::Result<JoinHandle<T>> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let core = Arc::new(TaskCore::new(id, options.home, options.name));
        let join = Arc::new(JoinState::new());
        let stack_size = options.stack_size.unwrap_or(self.stack_size);
        let task = NativeTask::new(core.clone(), stack_size, body, join.clone())?;
        self.enqueue_new(core.clone(), Box::new(task));
        Ok(JoinHandle::new(join, core))
    }
}

/// A [`Resumable`] spawned by [`TaskBuilder::spawn_resumable`]. After a slice that
/// ended in `Park`, the task's `notified` flag is cleared before the next slice: the
/// body re-checks its condition when resumed, so the wake-up that resumed it must not
/// make its next `Park` return at once forever. After any other slice the flag is
/// kept: a wake-up that arrived while the task was runnable (the body registered a
/// waker, then was preempted before parking) must still cancel its next `Park`.
struct ResumedTask {
    core: Arc<TaskCore>,
    body: Box<dyn Resumable>,
    parked_last: bool,
}

impl Resumable for ResumedTask {
    fn resume(&mut self) -> Step {
        if std::mem::take(&mut self.parked_last) {
            // ORDERING: pairs with the waker's store of `notified` (SeqCst on both
            // sides, see task.rs): a wake-up after this swap is seen by the worker
            // after the next `Park`.
            self.core.notified.swap(false, Ordering::SeqCst);
        }
        let step = self.body.resume();
        self.parked_last = step == Step::Park;
        step
    }
}
