//! Blocking and waking tasks (and plain threads) without spinning: `park`, unparking
//! through a [`Waker`], and `yield_now` / `switch` / `switch_to_priority`. The state
//! protocol is in `task.rs`.

use crate::context;
use crate::shared::Shared;
use crate::task::{PARKED, RUNNABLE, Step, TaskCore};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Wake, Waker};

/// Wakes one task: sets its `notified` flag and makes it runnable if it is parked.
pub(crate) struct TaskWaker {
    pub(crate) task: Arc<TaskCore>,
    pub(crate) shared: Arc<Shared>,
}

impl TaskWaker {
    fn unpark(&self) {
        // ORDERING: the unparker's half of the park/unpark protocol (task.rs): store
        // `notified`, then CAS `state` from `PARKED`, against the worker's store of
        // `PARKED` then load of `notified` (worker.rs, `Step::Park`). SeqCst on all four
        // accesses: at least one side sees the other's store, and the CAS lets one enqueue.
        self.task.notified.store(true, Ordering::SeqCst);
        if self
            .task
            .state
            .compare_exchange(PARKED, RUNNABLE, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            self.shared.count_unpark();
            let (task, local) = context::with_worker(|worker| {
                let here = worker.and_then(|worker| Some((worker, worker.index_in(&self.shared)?)));
                let Some((worker, index)) = here else {
                    return (Some(self.task.clone()), None);
                };
                // Woken by a task of a worker that may run it: the direct switch's
                // slot (`worker.rs`), which hands back what must take the queue.
                let task = if self.task.home.is_none_or(|home| home == index) {
                    worker.hand_off(self.task.clone())
                } else {
                    Some(self.task.clone())
                };
                (task, Some(index))
            });
            if let Some(task) = task {
                self.shared.queue.push(task, local);
            }
        }
    }
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.unpark();
    }
}

struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// A waker for the current task, or for the current thread outside tasks.
pub fn current_waker() -> Waker {
    match context::task_and_runtime() {
        Some((task, shared)) => Waker::from(Arc::new(TaskWaker { task, shared })),
        None => Waker::from(Arc::new(ThreadWaker(std::thread::current()))),
    }
}

/// Blocks the current task until it is woken (through [`current_waker`]), letting the
/// worker run other tasks; outside tasks, parks the thread. May return spuriously:
/// call it in a loop that re-checks the condition.
pub fn park() {
    // ORDERING: consumes a wake-up: pairs with the unparker's SeqCst store of `notified`
    // (`TaskWaker::unpark`). One stored before this swap is taken here (no suspension); one
    // stored after it is seen by the worker's load after it stores `PARKED`, so the park is
    // cancelled.
    let notified = context::with_task(|task| task.notified.swap(false, Ordering::SeqCst));
    match notified {
        Some(true) => {}
        Some(false) => {
            if context::suspend(Step::Park) {
                // ORDERING: the wake-up that resumed this task set `notified` before its CAS, or
                // the worker saw it set after storing `PARKED`; either happened before this resume
                // (the run queue's hand-over orders it), so this store comes after it in
                // `notified`'s order and consumes it. A wake-up stored between the resume and
                // this store is lost, harmlessly: `park` returns now and its caller re-checks its
                // condition. SeqCst, as every access of `notified`.
                context::with_task(|task| task.notified.store(false, Ordering::SeqCst));
            } else {
                std::thread::park();
            }
        }
        None => std::thread::park(),
    }
}

/// Lets other tasks run: the current task goes to the back of the run queue. Outside
/// tasks, yields the thread.
pub fn yield_now() {
    if !context::suspend(Step::Yield) {
        std::thread::yield_now();
    }
}

/// LUTS's `luts_switch`: if a runnable task announced a transaction id other than
/// `tx_id`, runs it first; otherwise the current task continues. Outside tasks, yields
/// the thread.
pub fn switch(tx_id: u64) {
    if !context::suspend(Step::Switch(tx_id)) {
        std::thread::yield_now();
    }
}

/// Announces the transaction the current task is about to run (LUTS's `luts_setid`);
/// does nothing outside tasks.
pub fn set_tx_id(tx_id: u64) {
    context::with_task(|task| task.tx_id.store(tx_id, Ordering::Relaxed));
}

/// Announces the current task's scheduling priority (read by
/// [`switch_to_priority`] of other tasks); does nothing outside tasks.
pub fn set_priority(priority: i64) {
    context::with_task(|task| task.priority.store(priority, Ordering::Relaxed));
}

/// TxLinux's conflict-reactive descheduling: if a runnable task announced a priority
/// of at least `min` ([`set_priority`]), runs it first; otherwise the current task
/// continues. Outside tasks, yields the thread.
pub fn switch_to_priority(min: i64) {
    if !context::suspend(Step::SwitchToPriority(min)) {
        std::thread::yield_now();
    }
}
