//! The run queue on transactions: a [`TxList`] of tasks on the runtime's private
//! engine (seed 001's port, without its busy-waits). Idle workers block in the
//! engine's `retry` and park their thread; the commit of a push wakes them.
//!
//! # Invariants
//! - Each node holds its own reference to its task, dropped when the node is
//!   released (after every transaction that could still read it has ended): scans
//!   read a task's pinning, transaction id and priority in place, so the task must
//!   outlive any attempt that can reach its node. A pop clones the reference.
//! - `alarm` changes (in a transaction) after every change of the stop condition
//!   (shutdown, fewer workers): `wake_all`.
//!
//! # Protocol (idle wait, no lost wake-up)
//! 1. Worker, in one transaction: read `alarm`; if `stop()`, leave; take the first
//!    node it may run; if none, `retry`. Its read set holds `alarm`, `head` and the
//!    `next` word of every node it passed.
//! 2. A push writes `head` (empty list) or the last node's `next` and commits: the
//!    engine wakes every waiter that read a word it wrote (`waiting.rs` in lutra-stm).
//! 3. Shutdown: store the stop condition (SeqCst), then `wake_all` writes `alarm`.
//!    A worker whose `stop()` saw the old condition had read `alarm` before that
//!    write, so the write's commit wakes it (or its wait's re-check sees it).

use super::TaskQueue;
use crate::sync_mode::SITE_RUN_QUEUE;
use crate::sync_mode::engine::TxEngine;
use crate::sync_mode::list::{Node, TxList, release_dropping_item};
use crate::task::TaskCore;
use lutra_stm::TVar;
use std::sync::Arc;

pub(crate) struct TransactionalQueue {
    engine: Arc<TxEngine>,
    tasks: TxList<Arc<TaskCore>>,
    alarm: TVar<usize>,
}

impl TransactionalQueue {
    pub(crate) fn new(engine: Arc<TxEngine>) -> Self {
        Self {
            engine,
            tasks: TxList::new(),
            alarm: TVar::new(0),
        }
    }
}

impl TaskQueue for TransactionalQueue {
    fn push(&self, task: Arc<TaskCore>) {
        let node = Node::new(task);
        self.engine.run(SITE_RUN_QUEUE, |tx| {
            // SAFETY: the node is new; the list owns it once this commits.
            unsafe { self.tasks.push_back(tx, node) }
        });
    }

    fn pop(&self, worker: usize, stop: &dyn Fn() -> bool) -> Option<Arc<TaskCore>> {
        self.engine.run(SITE_RUN_QUEUE, |tx| {
            tx.read(&self.alarm)?;
            if stop() {
                return Ok(None);
            }
            let Some(found) = self.tasks.find(tx, |task| task.may_run_on(worker))? else {
                return tx.retry();
            };
            // Dropped again if this attempt does not commit.
            let task = found.item().clone();
            let node = self.tasks.unlink(tx, found)?;
            // SAFETY: unlinked in this attempt, not pushed again; the node keeps its
            // reference until released (the invariant above).
            unsafe {
                self.tasks
                    .free(tx, node, release_dropping_item::<Arc<TaskCore>>)?
            };
            Ok(Some(task))
        })
    }

    fn switch_where(
        &self,
        worker: usize,
        current: Arc<TaskCore>,
        suits: &dyn Fn(&TaskCore) -> bool,
    ) -> bool {
        let node = Node::new(current);
        self.engine.run(SITE_RUN_QUEUE, |tx| {
            let found = self
                .tasks
                .find(tx, |task| task.may_run_on(worker) && suits(task))?;
            // SAFETY: `node` is new, `other` was unlinked in this attempt: each is
            // linked once, and the list owns both once this commits.
            unsafe {
                match found {
                    Some(found) => {
                        let other = self.tasks.unlink(tx, found)?;
                        self.tasks.push_front(tx, other)?;
                        self.tasks.push_back(tx, node)?;
                        Ok(true)
                    }
                    None => {
                        self.tasks.push_front(tx, node)?;
                        Ok(false)
                    }
                }
            }
        })
    }

    fn wake_all(&self) {
        self.engine.run(SITE_RUN_QUEUE, |tx| {
            let alarm = tx.read(&self.alarm)?;
            tx.write(&self.alarm, alarm.wrapping_add(1))
        });
    }
}
