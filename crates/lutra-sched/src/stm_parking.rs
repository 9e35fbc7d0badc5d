//! The engine's parking interface implemented by the scheduler: a transaction that
//! `retry`s parks its task (the worker runs others), waits yield to other tasks, and
//! the scheduling policies' `SwitchAway` runs LUTS's switch.

use crate::context;
use crate::suspend;
use std::task::Waker;

/// [`lutra_stm::Parking`] for engines used by tasks: configure the engine with
/// `Config::default().with_parking(Arc::new(TaskParking))`. Outside tasks it falls
/// back to parking the thread.
#[derive(Debug, Default, Clone, Copy)]
pub struct TaskParking;

impl lutra_stm::Parking for TaskParking {
    fn waker(&self) -> Waker {
        suspend::current_waker()
    }

    fn park(&self) {
        suspend::park();
    }

    fn yield_now(&self) {
        suspend::yield_now();
    }

    fn switch_away(&self) {
        let tx_id = context::with_task(|task| task.tx_id()).unwrap_or(0);
        suspend::switch(tx_id);
    }
}
