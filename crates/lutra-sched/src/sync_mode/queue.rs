//! [`SyncQueue`]: a FIFO shared by threads and tasks, synchronised by its domain.
//!
//! # Invariants
//! - Locks: a `VecDeque` in a mutex; `waiters` counts threads blocked in `pop`
//!   (changed under the mutex); a push notifies one only when it is non-zero.
//! - Transactions: a [`TxList`] of nodes (no copy of the whole queue per operation);
//!   `pushed - popped` is the length. Producers write the tail and `pushed`,
//!   consumers the head and `popped`: they conflict only when the queue holds fewer
//!   than two items. A popped item is moved out by a bitwise copy taken in the
//!   attempt that unlinks its node, and owned by the caller only once that attempt
//!   commits (an aborted attempt's copy is forgotten); the node is then freed without
//!   its item.
//!
//! # Protocol (blocking pop)
//! Locks: as `SyncCell::wait_until` (the mutex orders waiter and pusher).
//! Transactions: a pop that finds the list empty calls `retry`: it read `head`, which
//! the next push to an empty list writes, so that push's commit wakes it.

use super::SyncDomain;
use super::engine::{Tx, TxEngine};
use super::list::{Node, TxList, release_keeping_item};
use lutra_stm::{Abort, TVar};
use std::collections::VecDeque;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

enum Inner<T> {
    Locked {
        items: Mutex<VecDeque<T>>,
        ready: Condvar,
        waiters: AtomicUsize,
    },
    Transactional {
        engine: Arc<TxEngine>,
        list: TxList<T>,
        pushed: TVar<usize>,
        popped: TVar<usize>,
    },
}

/// A first-in first-out queue shared by OS threads and tasks, synchronised by a
/// [`SyncDomain`]: a mutex and a condition variable, or transactions on the domain's
/// private engine over a linked list of transactional nodes.
///
/// [`pop`](SyncQueue::pop) blocks the calling OS thread without spinning (a
/// condition variable, or `retry`); tasks should use
/// [`try_pop`](SyncQueue::try_pop) and wait through their runtime.
///
/// ```
/// use lutra_sched::sync_mode::{SyncDomain, SyncMode, SyncQueue};
/// use std::sync::Arc;
///
/// let queue = Arc::new(SyncQueue::new(&SyncDomain::new(SyncMode::Transactions)));
/// let consumer = {
///     let queue = queue.clone();
///     std::thread::spawn(move || (0..100).map(|_| queue.pop()).sum::<u64>())
/// };
/// (1..=100u64).for_each(|n| queue.push(n));
/// assert_eq!(consumer.join().unwrap(), 5050);
/// assert_eq!(queue.try_pop(), None);
/// ```
pub struct SyncQueue<T: Send + 'static> {
    inner: Inner<T>,
    site: u32,
}

// SAFETY: items move in and out whole (`T: Send`); no operation hands out a shared
// reference to an item, so `T: Sync` is not needed (the list's own `Sync` bound is for
// the run queue, which reads items in place).
unsafe impl<T: Send + 'static> Sync for SyncQueue<T> {}

impl<T: Send + 'static> SyncQueue<T> {
    /// An empty queue synchronised by `domain`.
    pub fn new(domain: &SyncDomain) -> Self {
        let inner = match domain.engine() {
            None => Inner::Locked {
                items: Mutex::new(VecDeque::new()),
                ready: Condvar::new(),
                waiters: AtomicUsize::new(0),
            },
            Some(engine) => Inner::Transactional {
                engine: engine.clone(),
                list: TxList::new(),
                pushed: TVar::new(0),
                popped: TVar::new(0),
            },
        };
        Self { inner, site: 0 }
    }

    /// Counts this queue's transactions under statistics site `site` (default 0).
    pub fn with_site(mut self, site: u32) -> Self {
        self.site = site;
        self
    }

    /// Appends `item` (and wakes a blocked `pop`).
    pub fn push(&self, item: T) {
        match &self.inner {
            Inner::Locked {
                items,
                ready,
                waiters,
            } => {
                let mut items = lock(items);
                items.push_back(item);
                // ORDERING: read under `items`'s lock, which poppers also hold while they
                // count themselves: the lock orders it, and Relaxed would do (SeqCst is
                // stronger than needed).
                if waiters.load(Ordering::SeqCst) > 0 {
                    ready.notify_one();
                }
            }
            Inner::Transactional {
                engine,
                list,
                pushed,
                ..
            } => {
                let node = Node::new(item);
                engine.run(self.site, |tx| {
                    // SAFETY: the node is new; the list owns it once this commits.
                    unsafe { list.push_back(tx, node)? };
                    let count = tx.read(pushed)?;
                    tx.write(pushed, count + 1)
                });
            }
        }
    }

    /// Takes the first item, if any.
    pub fn try_pop(&self) -> Option<T> {
        match &self.inner {
            Inner::Locked { items, .. } => lock(items).pop_front(),
            Inner::Transactional {
                engine,
                list,
                popped,
                ..
            } => engine
                .run(self.site, |tx| Self::take_first(tx, list, popped))
                .map(ManuallyDrop::into_inner),
        }
    }

    /// Takes the first item, blocking the current OS thread while the queue is empty.
    ///
    /// # Panics
    /// Inside a user transaction's closure (the wait would hold it open).
    pub fn pop(&self) -> T {
        super::ensure_may_block("SyncQueue::pop");
        match &self.inner {
            Inner::Locked {
                items,
                ready,
                waiters,
            } => {
                let mut items = lock(items);
                loop {
                    if let Some(item) = items.pop_front() {
                        return item;
                    }
                    // ORDERING: under `items`'s lock, released by the wait below: the lock
                    // orders it against `push`'s load (Relaxed would do).
                    waiters.fetch_add(1, Ordering::SeqCst);
                    items = ready
                        .wait(items)
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    // ORDERING: under `items`'s lock again (the wait re-took it); as the
                    // increment above.
                    waiters.fetch_sub(1, Ordering::SeqCst);
                }
            }
            Inner::Transactional {
                engine,
                list,
                popped,
                ..
            } => ManuallyDrop::into_inner(engine.run(self.site, |tx| {
                match Self::take_first(tx, list, popped)? {
                    Some(item) => Ok(item),
                    None => tx.retry(),
                }
            })),
        }
    }

    /// Unlinks the first node and copies its item out (owned once the attempt
    /// commits: see the module's invariants).
    fn take_first(
        tx: &mut Tx<'_>,
        list: &TxList<T>,
        popped: &TVar<usize>,
    ) -> Result<Option<ManuallyDrop<T>>, Abort> {
        let Some(first) = list.first(tx)? else {
            return Ok(None);
        };
        let node = list.unlink(tx, first)?;
        // SAFETY: the node was unlinked in this attempt and is not pushed again; its
        // item is moved out below, so the release keeps it.
        unsafe { list.free(tx, node, release_keeping_item::<T>)? };
        let count = tx.read(popped)?;
        tx.write(popped, count + 1)?;
        // SAFETY: the item is initialised and never changes while linked; the copy
        // becomes the only owner if (and only if) this attempt commits.
        Ok(Some(ManuallyDrop::new(unsafe {
            std::ptr::read(&*(*node).item)
        })))
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        match &self.inner {
            Inner::Locked { items, .. } => lock(items).len(),
            Inner::Transactional {
                engine,
                pushed,
                popped,
                ..
            } => engine.run(self.site, |tx| Ok(tx.read(pushed)? - tx.read(popped)?)),
        }
    }

    /// Whether the queue is empty.
    pub fn is_empty(&self) -> bool {
        match &self.inner {
            Inner::Locked { items, .. } => lock(items).is_empty(),
            Inner::Transactional { engine, list, .. } => {
                engine.run(self.site, |tx| list.is_empty(tx))
            }
        }
    }
}

impl<T: Send + 'static> std::fmt::Debug for SyncQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncQueue")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
