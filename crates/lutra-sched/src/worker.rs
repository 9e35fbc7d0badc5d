//! The worker run loop: take a runnable task, resume it, act on how it stopped.
//!
//! # Protocol (one slice)
//! 1. Mark the task `RUNNING` and current; resume its body.
//! 2. `Yield`: back of the queue. `Switch(id)`, `SwitchToPriority(min)`: the queue's
//!    switch. `Park`: store `PARKED`, then, if `notified` is set, CAS back to
//!    `RUNNABLE` and enqueue (see `task.rs`). `Done`: mark `DONE`, drop the body,
//!    count the task finished.
//!
//! # Invariants
//! - A worker leaves only between slices: when the runtime shuts down, or when the
//!   requested worker count drops below its index + 1.

use crate::context;
use crate::overflow;
use crate::shared::Shared;
use crate::task::{DONE, PARKED, RUNNABLE, RUNNING, Step, TaskCore};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Body of worker thread `index`.
pub(crate) fn run(shared: Arc<Shared>, index: usize, core: Option<core_affinity::CoreId>) {
    if let Some(core) = core {
        core_affinity::set_for_current(core);
    }
    overflow::ensure_alternate_stack();
    context::enter_worker(shared.clone(), index);
    while let Some(task) = shared.queue.pop(index, || shared.worker_must_stop(index)) {
        run_slice(&shared, index, task);
    }
    context::leave_worker();
}

fn run_slice(shared: &Arc<Shared>, index: usize, task: Arc<TaskCore>) {
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
            shared.queue.push(task);
        }
        Step::Switch(tx_id) => {
            task.state.store(RUNNABLE, Ordering::SeqCst);
            if shared.queue.switch(index, task, tx_id) {
                shared.count_switch();
            }
        }
        Step::SwitchToPriority(min) => {
            task.state.store(RUNNABLE, Ordering::SeqCst);
            if shared
                .queue
                .switch_where(index, task, |other| other.priority() >= min)
            {
                shared.count_switch();
            }
        }
        Step::Park => {
            task.state.store(PARKED, Ordering::SeqCst);
            if task.notified.load(Ordering::SeqCst)
                && task
                    .state
                    .compare_exchange(PARKED, RUNNABLE, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
            {
                shared.queue.push(task);
            }
        }
        Step::Done => {
            task.state.store(DONE, Ordering::SeqCst);
            task.body
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take();
            shared.task_finished();
        }
    }
}
