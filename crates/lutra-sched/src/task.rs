//! Tasks: what the run queue carries, whatever runs inside (a native stackful context,
//! later a Lua process resumed as a coroutine).
//!
//! # State word
//!
//! | state | meaning | who moves it out |
//! |-------|---------|------------------|
//! | `RUNNABLE` | in a run queue, or being handed to a worker | a worker, to `RUNNING` |
//! | `RUNNING` | a worker is resuming it | that worker: to `RUNNABLE` (yield), `PARKED`, `DONE` |
//! | `PARKED` | suspended by `park`, in no queue | the worker that parked it, or an unparker, to `RUNNABLE` by CAS (once) |
//! | `DONE` | finished; never runs again | nobody |
//!
//! `notified` is separate: an unpark sets it, `park` consumes it.
//!
//! # Protocol (park / unpark, no lost wake-up)
//! Task: `park` returns at once if `notified` was set (consuming it); otherwise it
//! suspends with [`Step::Park`]. Worker, after that suspension: store `PARKED`, then
//! load `notified`; if set, CAS `PARKED → RUNNABLE` and enqueue.
//! Unparker: store `notified`, then CAS `PARKED → RUNNABLE` and enqueue on success.
//! Both sides store, then load the other's word (sequentially consistent): at least one
//! sees the other, and the CAS lets exactly one enqueue.

use crate::local::TaskLocal;
use std::fmt;
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering,
};

/// How a task's slice of execution ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Still runnable: put it at the back of the run queue.
    Yield,
    /// Suspended until unparked.
    Park,
    /// Runnable, but let a task whose transaction id differs from this one run first
    /// (LUTS's `luts_switch`).
    Switch(u64),
    /// Runnable, but let a task whose priority is at least this run first (TxLinux's
    /// conflict-reactive descheduling).
    SwitchToPriority(i64),
    /// Finished.
    Done,
}

/// Something a worker can resume: the body of a task.
///
/// `resume` runs the task until it yields, parks, switches or finishes, and must
/// return without unwinding (catch panics inside and report them through the task's
/// own join handle).
pub trait Resumable: Send {
    /// Runs one slice of the task.
    fn resume(&mut self) -> Step;
}

pub(crate) const RUNNABLE: u8 = 0;
pub(crate) const RUNNING: u8 = 1;
pub(crate) const PARKED: u8 = 2;
pub(crate) const DONE: u8 = 3;

/// `last_worker` of a task that has not run yet.
pub(crate) const NO_WORKER: usize = usize::MAX;

/// The scheduler's record of one task (LUTS's execution context record).
pub struct TaskCore {
    id: u64,
    pub(crate) state: AtomicU8,
    pub(crate) notified: AtomicBool,
    /// The transaction id the task announced last (`set_tx_id`), 0 if none.
    pub(crate) tx_id: AtomicU64,
    /// The scheduling priority the task announced last (`set_priority`), 0 if none.
    pub(crate) priority: AtomicI64,
    /// The worker a pinned task must run on.
    pub(crate) home: Option<usize>,
    /// The task's body, taken by the worker that runs a slice (parking_lot's mutex:
    /// no poison bookkeeping on each slice; a body's panic is caught by the body, or
    /// leaves the task to be finished, as `std`'s poisoned lock was taken anyway).
    pub(crate) body: parking_lot::Mutex<Option<Box<dyn Resumable>>>,
    /// The suspension point of a native task (type-erased `Yielder`), null otherwise.
    pub(crate) yielder: AtomicPtr<()>,
    pub(crate) name: Option<String>,
    /// A client library's value for this task (see `local.rs`).
    pub(crate) local: TaskLocal,
    /// The worker that ran the task's last slice ([`NO_WORKER`] before the first),
    /// written only by the worker starting a slice (`rest.rs` counts crossings).
    pub(crate) last_worker: AtomicUsize,
}

impl TaskCore {
    pub(crate) fn new(id: u64, home: Option<usize>, name: Option<String>) -> Self {
        Self {
            id,
            state: AtomicU8::new(RUNNABLE),
            notified: AtomicBool::new(false),
            tx_id: AtomicU64::new(0),
            priority: AtomicI64::new(0),
            home,
            body: parking_lot::Mutex::new(None),
            yielder: AtomicPtr::new(std::ptr::null_mut()),
            name,
            local: TaskLocal::default(),
            last_worker: AtomicUsize::new(NO_WORKER),
        }
    }

    /// The task's id, unique within its runtime.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The task's name, if it was given one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The transaction id the task announced last.
    pub fn tx_id(&self) -> u64 {
        self.tx_id.load(Ordering::Relaxed)
    }

    /// The scheduling priority the task announced last (higher runs first when a task
    /// is descheduled with [`switch_to_priority`](crate::switch_to_priority)).
    pub fn priority(&self) -> i64 {
        self.priority.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for TaskCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("state", &self.state.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}
