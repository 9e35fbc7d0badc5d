//! [`SyncCell`]: one value shared by threads and tasks, synchronised by its domain.
//!
//! # Invariants
//! - Locks: the value lives in a mutex; `waiters` counts threads blocked in
//!   `wait_until` (changed under the mutex), and an update notifies only when it is
//!   non-zero (a condition-variable notify is a system call).
//! - Transactions: `current` holds the address of an immutable [`CellBox`]; an update
//!   publishes a new box (copy on write) and frees the old one through
//!   `free_on_commit`, after every transaction that could still read it has ended.
//!
//! # Protocol (wait, locks)
//! 1. Waiter, under the mutex: test the condition; if it fails, count itself in
//!    `waiters` and wait on the condition variable (which releases the mutex).
//! 2. Updater, under the mutex: change the value, and notify all if `waiters` > 0.
//!
//! The mutex orders the two, so the updater sees the count or the waiter sees the
//! new value.

use super::SyncDomain;
use super::engine::{Tx, TxEngine};
use lutra_stm::{Abort, TVar};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// A published value.
struct CellBox<T> {
    value: T,
}

/// Frees a box and its value.
///
/// # Safety
/// `addr` comes from `Box::<CellBox<T>>::into_raw` and is released once.
unsafe fn release_box<T>(addr: usize, _size: usize) {
    // SAFETY: guaranteed by the caller.
    drop(unsafe { Box::from_raw(addr as *mut CellBox<T>) });
}

enum Inner<T> {
    Locked {
        value: Mutex<T>,
        changed: Condvar,
        waiters: AtomicUsize,
    },
    Transactional {
        engine: Arc<TxEngine>,
        current: TVar<usize>,
        _value: PhantomData<Box<CellBox<T>>>,
    },
}

/// A value shared by OS threads and tasks (a channel registry, a process count, a
/// recycle list), synchronised by a [`SyncDomain`]: a mutex, or transactions on the
/// domain's private engine.
///
/// In [`SyncMode::Transactions`](super::SyncMode) the closures given to
/// [`update`](SyncCell::update), [`read`](SyncCell::read) and
/// [`wait_until`](SyncCell::wait_until) run inside a transaction and **may run more
/// than once** (after a conflict, or each time a wait re-checks): they must not have
/// side effects (no I/O, no sends, no wake-ups, no other `SyncCell` or `SyncQueue`:
/// nesting panics). An update copies the value (`T: Clone`) and publishes the copy, so
/// keep values small, or split a large structure into several cells.
///
/// ```
/// use lutra_sched::sync_mode::{SyncCell, SyncDomain, SyncMode};
/// use std::sync::Arc;
///
/// for mode in SyncMode::ALL {
///     let domain = SyncDomain::new(mode);
///     let pending = Arc::new(SyncCell::new(&domain, 3u32));
///     let workers: Vec<_> = (0..3)
///         .map(|_| {
///             let pending = pending.clone();
///             std::thread::spawn(move || pending.update(|n| *n -= 1))
///         })
///         .collect();
///     // Blocks (no busy-wait) until every worker has counted itself out.
///     pending.wait_until(|n| (*n == 0).then_some(()));
///     workers.into_iter().for_each(|w| w.join().unwrap());
/// }
/// ```
pub struct SyncCell<T: Clone + Send + Sync + 'static> {
    inner: Inner<T>,
    site: u32,
}

impl<T: Clone + Send + Sync + 'static> SyncCell<T> {
    /// A cell holding `value`, synchronised by `domain`.
    pub fn new(domain: &SyncDomain, value: T) -> Self {
        let inner = match domain.engine() {
            None => Inner::Locked {
                value: Mutex::new(value),
                changed: Condvar::new(),
                waiters: AtomicUsize::new(0),
            },
            Some(engine) => Inner::Transactional {
                engine: engine.clone(),
                current: TVar::new(Self::publish(value) as usize),
                _value: PhantomData,
            },
        };
        Self { inner, site: 0 }
    }

    /// Counts this cell's transactions under statistics site `site` (default 0).
    pub fn with_site(mut self, site: u32) -> Self {
        self.site = site;
        self
    }

    fn publish(value: T) -> *mut CellBox<T> {
        Box::into_raw(Box::new(CellBox { value }))
    }

    /// The value in the running attempt.
    fn current<'a>(tx: &mut Tx<'_>, current: &TVar<usize>) -> Result<&'a CellBox<T>, Abort> {
        let addr = tx.read(current)?;
        // SAFETY: `current` always holds a published box (module invariant); it stays
        // allocated while the running attempt could read it.
        Ok(unsafe { &*(addr as *const CellBox<T>) })
    }

    /// Changes the value with `change` and returns what it returns.
    ///
    /// ```
    /// use lutra_sched::sync_mode::{SyncCell, SyncDomain, SyncMode};
    /// let names = SyncCell::new(&SyncDomain::new(SyncMode::Transactions), Vec::<String>::new());
    /// let count = names.update(|names| { names.push("ch1".into()); names.len() });
    /// assert_eq!(count, 1);
    /// ```
    pub fn update<R>(&self, mut change: impl FnMut(&mut T) -> R) -> R {
        match &self.inner {
            Inner::Locked {
                value,
                changed,
                waiters,
            } => {
                let mut guard = lock(value);
                let result = change(&mut guard);
                // ORDERING: read under `value`'s lock, which waiters also hold while they
                // count themselves: the lock orders it, and Relaxed would do (SeqCst is
                // stronger than needed).
                if waiters.load(Ordering::SeqCst) > 0 {
                    changed.notify_all();
                }
                result
            }
            Inner::Transactional {
                engine, current, ..
            } => engine.run(self.site, |tx| {
                let old = Self::current(tx, current)?;
                let mut value = old.value.clone();
                let result = change(&mut value);
                let new = Self::publish(value);
                tx.free_on_abort(new as usize, release_box::<T>);
                tx.write(current, new as usize)?;
                let old = old as *const CellBox<T> as usize;
                // SAFETY: the old box is unreachable once this attempt commits (it
                // wrote `current`), and only the attempt that replaces it frees it.
                unsafe { tx.free_on_commit(old, release_box::<T>)? };
                Ok(result)
            }),
        }
    }

    /// Returns `look(&value)`.
    ///
    /// ```
    /// use lutra_sched::sync_mode::{SyncCell, SyncDomain};
    /// let cell = SyncCell::new(&SyncDomain::default(), (1, "one"));
    /// assert_eq!(cell.read(|(_, name)| name.len()), 3);
    /// ```
    pub fn read<R>(&self, mut look: impl FnMut(&T) -> R) -> R {
        match &self.inner {
            Inner::Locked { value, .. } => look(&lock(value)),
            Inner::Transactional {
                engine, current, ..
            } => engine.run(self.site, |tx| Ok(look(&Self::current(tx, current)?.value))),
        }
    }

    /// Blocks the current OS thread until `ready(&value)` returns `Some`, and returns
    /// that. Locks: waits on a condition variable; transactions: `retry`, woken by the
    /// commit of an update. Neither spins.
    ///
    /// Inside a task this blocks the worker thread: tasks should wait through their
    /// runtime (park and wakers) instead.
    ///
    /// # Panics
    /// Inside a user transaction's closure (the wait would hold it open).
    pub fn wait_until<R>(&self, mut ready: impl FnMut(&T) -> Option<R>) -> R {
        super::ensure_may_block("SyncCell::wait_until");
        match &self.inner {
            Inner::Locked {
                value,
                changed,
                waiters,
            } => {
                let mut guard = lock(value);
                loop {
                    if let Some(result) = ready(&guard) {
                        return result;
                    }
                    // ORDERING: under `value`'s lock, released by the wait below: the lock
                    // orders it against `update`'s load (Relaxed would do).
                    waiters.fetch_add(1, Ordering::SeqCst);
                    guard = changed
                        .wait(guard)
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    // ORDERING: under `value`'s lock again (the wait re-took it); as the
                    // increment above.
                    waiters.fetch_sub(1, Ordering::SeqCst);
                }
            }
            Inner::Transactional {
                engine, current, ..
            } => engine.run(self.site, |tx| {
                match ready(&Self::current(tx, current)?.value) {
                    Some(result) => Ok(result),
                    None => tx.retry(),
                }
            }),
        }
    }
}

impl<T: Clone + Send + Sync + 'static> Drop for SyncCell<T> {
    fn drop(&mut self) {
        if let Inner::Transactional { current, .. } = &mut self.inner {
            // SAFETY: exclusive access: the published box is the cell's alone now.
            unsafe { release_box::<T>(current.get_mut(), 0) };
        }
    }
}

impl<T: Clone + Send + Sync + 'static + std::fmt::Debug> std::fmt::Debug for SyncCell<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let value = self.read(T::clone);
        f.debug_tuple("SyncCell").field(&value).finish()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
