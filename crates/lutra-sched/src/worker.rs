//! The worker run loop: take a runnable task, resume it, act on how it stopped.
//!
//! # Protocol (one slice)
//! 1. Mark the task `RUNNING` and current; resume its body.
//! 2. `Yield`: the queue's yield (back of the worker's own queue, its front runs
//!    next, without leaving the worker's queue). `Switch(id)`, `SwitchToPriority(min)`:
//!    the queue's switch (the task it picks runs next). `Park`: store `PARKED`, then, if
//!    `notified` is set, CAS back to `RUNNABLE` and enqueue (see `task.rs`). `Done`:
//!    mark `DONE`, drop the body, count the task finished.
//! 3. The next task: the one step 2 picked, else the queue's `next` (which may
//!    sleep). Every `GLOBAL_QUEUE_INTERVAL` slices the global queue comes first: an
//!    unpinned task's yield `rotate`s through it, and `next` looks at it first.
//!
//! # Invariants
//! - A worker leaves only between slices: when the runtime shuts down, or when the
//!   requested worker count drops below its index + 1. A task it picked but did not
//!   start goes back to its queue; a leaving worker hands its unpinned tasks to the
//!   global queue (`retire`).

use crate::context;
use crate::overflow;
use crate::shared::Shared;
use crate::task::{DONE, PARKED, RUNNABLE, RUNNING, Step, TaskCore};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Slices between two looks at the global queue first (tokio's and Go's 61: prime,
/// so it does not fall into step with task patterns).
const GLOBAL_QUEUE_INTERVAL: u32 = 61;

/// Body of worker thread `index`.
pub(crate) fn run(shared: Arc<Shared>, index: usize, core: Option<core_affinity::CoreId>) {
    if let Some(core) = core {
        core_affinity::set_for_current(core);
    }
    overflow::ensure_alternate_stack();
    context::enter_worker(shared.clone(), index);
    let stop = || shared.worker_must_stop(index);
    let mut tick: u32 = 0;
    let mut next = None;
    loop {
        tick = tick.wrapping_add(1);
        let global_first = tick.is_multiple_of(GLOBAL_QUEUE_INTERVAL);
        let task = match next.take() {
            Some(task) if !stop() => task,
            Some(task) => {
                shared.queue.requeue(index, task);
                break;
            }
            None => match shared.queue.next(index, global_first, stop) {
                Some(task) => task,
                None => break,
            },
        };
        next = run_slice(&shared, index, task, global_first);
    }
    shared.queue.retire(index);
    context::leave_worker();
}

/// Runs one slice of `task`; returns the task to run next, if the slice's end chose
/// one.
fn run_slice(
    shared: &Arc<Shared>,
    index: usize,
    task: Arc<TaskCore>,
    global_first: bool,
) -> Option<Arc<TaskCore>> {
    task.state.store(RUNNING, Ordering::SeqCst);
    context::set_task(Some(task.clone()));
    let step = {
        let mut body = task
            .body
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        body.as_mut().map_or(Step::Done, |body| body.resume())
    };
    context::set_task(None);
    match step {
        Step::Yield => {
            task.state.store(RUNNABLE, Ordering::SeqCst);
            Some(if global_first && task.home.is_none() {
                shared.queue.rotate(index, task)
            } else {
                shared.queue.yield_task(index, task)
            })
        }
        Step::Switch(tx_id) => {
            task.state.store(RUNNABLE, Ordering::SeqCst);
            let (next, switched) = shared.queue.switch(index, task, tx_id);
            if switched {
                shared.count_switch();
            }
            Some(next)
        }
        Step::SwitchToPriority(min) => {
            task.state.store(RUNNABLE, Ordering::SeqCst);
            let (next, switched) = shared
                .queue
                .switch_where(index, task, |other| other.priority() >= min);
            if switched {
                shared.count_switch();
            }
            Some(next)
        }
        Step::Park => {
            task.state.store(PARKED, Ordering::SeqCst);
            if task.notified.load(Ordering::SeqCst)
                && task
                    .state
                    .compare_exchange(PARKED, RUNNABLE, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
            {
                shared.queue.push(task, Some(index));
            }
            None
        }
        Step::Done => {
            task.state.store(DONE, Ordering::SeqCst);
            task.body
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take();
            shared.task_finished();
            None
        }
    }
}
