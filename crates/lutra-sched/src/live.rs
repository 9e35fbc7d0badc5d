//! The count of live tasks (spawned, not yet `DONE`) and the wait for it to reach 0
//! (luaproc's `mutex_lp_count` and `cond_no_active_lp`), in the runtime's mode.
//!
//! # Invariants
//! - Locks: `count` in a mutex; the decrement that reaches 0 notifies `idle`.
//! - Transactions: `count` and `idle` (1 when `count` is 0) change in the same
//!   transaction; a waiter reads only `idle`, so it is woken when the runtime becomes
//!   idle, not at every spawn or finish.

use crate::sync_mode::engine::TxEngine;
use crate::sync_mode::{SITE_TASK_COUNT, SyncDomain};
use lutra_stm::TVar;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

pub(crate) enum LiveTasks {
    Locked {
        count: Mutex<usize>,
        idle: Condvar,
    },
    Transactional {
        engine: Arc<TxEngine>,
        count: TVar<usize>,
        idle: TVar<usize>,
    },
}

impl LiveTasks {
    pub(crate) fn new(domain: &SyncDomain) -> Self {
        match domain.engine() {
            None => Self::Locked {
                count: Mutex::new(0),
                idle: Condvar::new(),
            },
            Some(engine) => Self::Transactional {
                engine: engine.clone(),
                count: TVar::new(0),
                idle: TVar::new(1),
            },
        }
    }

    /// One more task.
    pub(crate) fn add(&self) {
        match self {
            Self::Locked { count, .. } => *lock(count) += 1,
            Self::Transactional {
                engine,
                count,
                idle,
            } => engine.run(SITE_TASK_COUNT, |tx| {
                let live = tx.read(count)?;
                if live == 0 {
                    tx.write(idle, 0)?;
                }
                tx.write(count, live + 1)
            }),
        }
    }

    /// One task fewer; wakes `wait_idle` when none is left.
    pub(crate) fn remove(&self) {
        match self {
            Self::Locked { count, idle } => {
                let mut live = lock(count);
                *live -= 1;
                if *live == 0 {
                    idle.notify_all();
                }
            }
            Self::Transactional {
                engine,
                count,
                idle,
            } => engine.run(SITE_TASK_COUNT, |tx| {
                let live = tx.read(count)? - 1;
                if live == 0 {
                    tx.write(idle, 1)?;
                }
                tx.write(count, live)
            }),
        }
    }

    /// Blocks the current thread until no task is live.
    pub(crate) fn wait_idle(&self) {
        match self {
            Self::Locked { count, idle } => {
                let mut live = lock(count);
                while *live > 0 {
                    live = idle
                        .wait(live)
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                }
            }
            Self::Transactional { engine, idle, .. } => engine.run(SITE_TASK_COUNT, |tx| {
                if tx.read(idle)? == 1 {
                    Ok(())
                } else {
                    tx.retry()
                }
            }),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
