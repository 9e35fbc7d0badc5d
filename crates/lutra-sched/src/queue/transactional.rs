//! The run queues on transactions: each worker's queue and the global queue a
//! [`TxList`] of tasks on the runtime's private engine (seed 001's port, without its
//! busy-waits). A yield is one transaction on the worker's own list, which no other
//! worker writes while it is busy: it commits without conflict and without a system
//! call. Idle workers sleep in the engine's `retry`, each on a word of its own, so a
//! push wakes exactly the sleeper it chose.
//!
//! # Invariants
//! - Each node holds its own reference to its task, dropped when the node is
//!   released (after every transaction that could still read it has ended): scans
//!   read a task's pinning, transaction id and priority in place, so the task must
//!   outlive any attempt that can reach its node. Taking a task clones the reference.
//! - `asleep` of worker `w` is 1 exactly while `w` is registered as a sleeper;
//!   `sleeping` is the number of such workers. Both change only in transactions.
//! - `alarm` changes (in a transaction) after every change of the stop condition
//!   (shutdown, fewer workers): `wake_all`.
//!
//! # Protocol (idle wait, no lost wake-up)
//! 1. Worker `w`, in one transaction: read `alarm`; if `stop()`, leave; take a task
//!    from its own list, the global list, or (unpinned) another worker's list; if
//!    there is none, write `asleep[w] = 1` and `sleeping + 1` and commit.
//! 2. Worker `w`, in a second transaction: read `asleep[w]`; while it is 1, `retry`
//!    (the thread parks until a commit writes it). Then start over at 1.
//! 3. A push, in the transaction that links the task: read `sleeping`; if non-zero,
//!    choose a sleeper that may run the task (for a pinned task only its worker),
//!    write its `asleep` to 0 and `sleeping − 1`.
//!
//! Step 1 and the push are transactions on common words (the lists the push writes,
//! which step 1 read; `sleeping`, which both read and step 1 writes): one is
//! serialised before the other. If the push comes first, step 1 finds the task; if
//! step 1 does, the push sees the registration and clears `asleep[w]`, whose commit
//! wakes step 2 (or step 2 reads 0 and never waits).
//!
//! Stopping: the stop condition is stored (SeqCst), then `wake_all` writes `alarm`
//! and clears every `asleep`. Step 1 read `alarm`: if `wake_all` commits before
//! step 1 does, step 1 is invalidated and re-runs, and sees the condition; otherwise
//! `wake_all` finds `w` registered and clears it.

use super::TaskQueue;
use super::slots::Slots;
use crate::sync_mode::SITE_RUN_QUEUE;
use crate::sync_mode::engine::{Tx, TxEngine};
use crate::sync_mode::list::{Node, TxList, release_dropping_item};
use crate::task::TaskCore;
use lutra_stm::{Abort, TVar};
use std::sync::Arc;

/// One worker's queue and sleep word.
struct Local {
    tasks: TxList<Arc<TaskCore>>,
    asleep: TVar<usize>,
}

impl Default for Local {
    fn default() -> Self {
        Self {
            tasks: TxList::new(),
            asleep: TVar::new(0),
        }
    }
}

/// What step 1 of the idle protocol ended with.
enum Look {
    Found(Arc<TaskCore>),
    Stop,
    Registered,
}

pub(crate) struct TransactionalQueue {
    engine: Arc<TxEngine>,
    locals: Slots<Local>,
    global: TxList<Arc<TaskCore>>,
    sleeping: TVar<usize>,
    alarm: TVar<usize>,
}

/// A new node for `task`, owned by the caller until a push commits.
fn node(task: Arc<TaskCore>) -> *mut Node<Arc<TaskCore>> {
    Node::new(task)
}

/// Frees a node that was never linked.
fn discard(node: *mut Node<Arc<TaskCore>>) {
    // SAFETY: from `Node::new`, never published (no committed attempt linked it), so
    // no transaction can reach it; released once, here.
    unsafe { release_dropping_item::<Arc<TaskCore>>(node as usize, 0) };
}

/// Takes the first task of `list` that satisfies `suits` (the node is freed once the
/// attempt commits; the clone is dropped again if it does not).
fn take(
    tx: &mut Tx<'_>,
    list: &TxList<Arc<TaskCore>>,
    suits: impl FnMut(&Arc<TaskCore>) -> bool,
) -> Result<Option<Arc<TaskCore>>, Abort> {
    let Some(found) = list.find(tx, suits)? else {
        return Ok(None);
    };
    let task = found.item().clone();
    let node = list.unlink(tx, found)?;
    // SAFETY: unlinked in this attempt, not pushed again; the node keeps its
    // reference until released (the module's invariant).
    unsafe { list.free(tx, node, release_dropping_item::<Arc<TaskCore>>)? };
    Ok(Some(task))
}

impl TransactionalQueue {
    pub(crate) fn new(engine: Arc<TxEngine>) -> Self {
        Self {
            engine,
            locals: Slots::new(),
            global: TxList::new(),
            sleeping: TVar::new(0),
            alarm: TVar::new(0),
        }
    }

    /// Step 3 of the protocol, inside the pushing transaction: wakes a sleeper that
    /// may run a task pinned to `home` (any sleeper if `None`).
    fn wake_in(&self, tx: &mut Tx<'_>, home: Option<usize>) -> Result<(), Abort> {
        let sleeping = tx.read(&self.sleeping)?;
        if sleeping == 0 {
            return Ok(());
        }
        let candidates = match home {
            Some(home) => home..home + 1,
            None => 0..self.locals.len(),
        };
        for worker in candidates {
            let asleep = &self.locals.get(worker).asleep;
            if tx.read(asleep)? == 1 {
                tx.write(asleep, 0)?;
                return tx.write(&self.sleeping, sleeping - 1);
            }
        }
        Ok(())
    }

    /// Step 1's look for `worker`: own and global list (in the order asked), then the
    /// first unpinned task of another worker's list.
    fn find(
        &self,
        tx: &mut Tx<'_>,
        worker: usize,
        global_first: bool,
    ) -> Result<Option<Arc<TaskCore>>, Abort> {
        let own = &self.locals.get(worker).tasks;
        let (first, second) = if global_first {
            (&self.global, own)
        } else {
            (own, &self.global)
        };
        if let Some(task) = take(tx, first, |_| true)? {
            return Ok(Some(task));
        }
        if let Some(task) = take(tx, second, |_| true)? {
            return Ok(Some(task));
        }
        let workers = self.locals.len();
        for offset in 1..workers {
            let victim = &self.locals.get((worker + offset) % workers).tasks;
            if let Some(task) = take(tx, victim, |task| task.home.is_none())? {
                return Ok(Some(task));
            }
        }
        Ok(None)
    }

    /// Step 1 of the protocol.
    fn look(&self, worker: usize, global_first: bool, stop: &dyn Fn() -> bool) -> Look {
        let local = self.locals.get(worker);
        self.engine.run(SITE_RUN_QUEUE, |tx| {
            tx.read(&self.alarm)?;
            if stop() {
                return Ok(Look::Stop);
            }
            if let Some(task) = self.find(tx, worker, global_first)? {
                return Ok(Look::Found(task));
            }
            tx.write(&local.asleep, 1)?;
            let sleeping = tx.read(&self.sleeping)?;
            tx.write(&self.sleeping, sleeping + 1)?;
            Ok(Look::Registered)
        })
    }
}

impl TaskQueue for TransactionalQueue {
    fn push(&self, task: Arc<TaskCore>, local: Option<usize>) {
        let home = task.home;
        let list = match home.or(local) {
            Some(worker) => &self.locals.get(worker).tasks,
            None => &self.global,
        };
        let node = node(task);
        self.engine.run(SITE_RUN_QUEUE, |tx| {
            // SAFETY: the node is new; the list owns it once this commits.
            unsafe { list.push_back(tx, node)? };
            self.wake_in(tx, home)
        });
    }

    fn yield_task(&self, worker: usize, current: Arc<TaskCore>) -> Arc<TaskCore> {
        let tasks = &self.locals.get(worker).tasks;
        let node = node(current.clone());
        let next = self.engine.run(SITE_RUN_QUEUE, |tx| {
            let Some(next) = take(tx, tasks, |_| true)? else {
                return Ok(None);
            };
            // SAFETY: the node is new; the list owns it once this commits.
            unsafe { tasks.push_back(tx, node)? };
            Ok(Some(next))
        });
        next.unwrap_or_else(|| {
            discard(node);
            current
        })
    }

    fn rotate(&self, worker: usize, current: Arc<TaskCore>) -> Arc<TaskCore> {
        let own = &self.locals.get(worker).tasks;
        let node = node(current.clone());
        let next = self.engine.run(SITE_RUN_QUEUE, |tx| {
            let next = match take(tx, &self.global, |_| true)? {
                Some(next) => next,
                None => match take(tx, own, |_| true)? {
                    Some(next) => {
                        self.wake_in(tx, None)?;
                        next
                    }
                    None => return Ok(None),
                },
            };
            // SAFETY: the node is new; the list owns it once this commits.
            unsafe { self.global.push_back(tx, node)? };
            Ok(Some(next))
        });
        next.unwrap_or_else(|| {
            discard(node);
            current
        })
    }

    fn requeue(&self, worker: usize, current: Arc<TaskCore>) {
        let tasks = &self.locals.get(worker).tasks;
        let node = node(current);
        self.engine.run(SITE_RUN_QUEUE, |tx| {
            // SAFETY: the node is new; the list owns it once this commits.
            unsafe { tasks.push_back(tx, node) }
        });
    }

    fn switch_where(
        &self,
        worker: usize,
        current: Arc<TaskCore>,
        suits: &dyn Fn(&TaskCore) -> bool,
    ) -> (Arc<TaskCore>, bool) {
        let tasks = &self.locals.get(worker).tasks;
        let node = node(current.clone());
        let other = self.engine.run(SITE_RUN_QUEUE, |tx| {
            let Some(other) = take(tx, tasks, |task| suits(task))? else {
                return Ok(None);
            };
            // SAFETY: the node is new; the list owns it once this commits.
            unsafe { tasks.push_back(tx, node)? };
            Ok(Some(other))
        });
        match other {
            Some(other) => (other, true),
            None => {
                discard(node);
                (current, false)
            }
        }
    }

    fn next(
        &self,
        worker: usize,
        global_first: bool,
        stop: &dyn Fn() -> bool,
    ) -> Option<Arc<TaskCore>> {
        let asleep = &self.locals.get(worker).asleep;
        loop {
            match self.look(worker, global_first, stop) {
                Look::Found(task) => return Some(task),
                Look::Stop => return None,
                Look::Registered => self.engine.run(SITE_RUN_QUEUE, |tx| {
                    if tx.read(asleep)? == 1 {
                        tx.retry()
                    } else {
                        Ok(())
                    }
                }),
            }
        }
    }

    fn retire(&self, worker: usize) {
        let tasks = &self.locals.get(worker).tasks;
        loop {
            let moved = self.engine.run(SITE_RUN_QUEUE, |tx| {
                let Some(found) = tasks.find(tx, |task| task.home.is_none())? else {
                    return Ok(false);
                };
                let node = tasks.unlink(tx, found)?;
                // SAFETY: unlinked in this attempt and linked once again here: the
                // global list owns it once this commits.
                unsafe { self.global.push_back_unlinked(tx, node)? };
                Ok(true)
            });
            if !moved {
                break;
            }
        }
        self.engine.run(SITE_RUN_QUEUE, |tx| self.wake_in(tx, None));
    }

    fn wake_all(&self) {
        self.engine.run(SITE_RUN_QUEUE, |tx| {
            let alarm = tx.read(&self.alarm)?;
            tx.write(&self.alarm, alarm.wrapping_add(1))?;
            for worker in 0..self.locals.len() {
                let asleep = &self.locals.get(worker).asleep;
                if tx.read(asleep)? == 1 {
                    tx.write(asleep, 0)?;
                }
            }
            tx.write(&self.sleeping, 0)
        });
    }
}
