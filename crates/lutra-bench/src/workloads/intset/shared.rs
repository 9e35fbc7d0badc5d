//! What threads share in the benchmark and the tests: a set made safe to use from many
//! threads, behind one trait ([`SharedIntSet`]) so that the contenders are measured by
//! the same code (as parking_lot's `benchmark/src/bin/mutex.rs` does for locks).
//!
//! | contender | synchronization |
//! |-----------|-----------------|
//! | [`StmIntSet`] | each operation is one transaction of its engine |
//! | `Mutex<Sequential<S>>` | one global lock |
//! | `RwLock<Sequential<S>>` | one global reader-writer lock (lookups share it) |
//!
//! [`Sequential`] alone is the unsynchronized baseline: one thread, `&mut` access.

use super::IntSet;
use super::arena::NodePool;
use super::memory::{Direct, PlainWord};
use lutra_stm::{Abort, Stm, TVar, Transaction};
use std::sync::{Mutex, RwLock};

/// Statistics site of [`StmIntSet`] inserts.
pub const SITE_INSERT: u32 = 1;
/// Statistics site of [`StmIntSet`] removes.
pub const SITE_REMOVE: u32 = 2;
/// Statistics site of [`StmIntSet`] lookups.
pub const SITE_CONTAINS: u32 = 3;

/// A set many threads use at once; each thread first takes a [`SharedIntSet::handle`].
pub trait SharedIntSet: Sync {
    /// A thread's own state (its node pool, if the set allocates nodes).
    type Handle<'s>
    where
        Self: 's;

    /// A handle for the calling thread; keep it for the thread's operations.
    fn handle(&self) -> Self::Handle<'_>;

    /// Adds `key`; `false` if present.
    fn insert(&self, handle: &mut Self::Handle<'_>, key: u64) -> bool;

    /// Removes `key`; `false` if absent.
    fn remove(&self, handle: &mut Self::Handle<'_>, key: u64) -> bool;

    /// Whether `key` is present.
    fn contains(&self, handle: &mut Self::Handle<'_>, key: u64) -> bool;
}

/// A transactional set with the engine its words belong to.
#[derive(Debug)]
pub struct StmIntSet<S> {
    stm: Stm,
    set: S,
}

impl<S: IntSet<Word = TVar<u64>>> StmIntSet<S> {
    /// An empty set sized for `expected` keys, used through `stm` only.
    pub fn new(stm: Stm, expected: usize) -> Self {
        Self {
            stm,
            set: S::with_capacity(expected),
        }
    }

    /// The engine.
    pub fn stm(&self) -> &Stm {
        &self.stm
    }

    /// The underlying structure, for composing its operations into larger
    /// transactions (follow the [`NodePool`] protocol).
    pub fn set(&self) -> &S {
        &self.set
    }

    /// Every key, ascending, read in one transaction.
    pub fn elements(&self) -> Vec<u64> {
        self.stm.atomically(|tx| self.set.elements(tx))
    }

    /// Runs `op` as one transaction at `site`, following the [`NodePool`] protocol.
    fn run<T>(
        &self,
        site: u32,
        pool: &mut NodePool,
        mut op: impl FnMut(&mut Transaction<'_>, &mut NodePool) -> Result<T, Abort>,
    ) -> T {
        let result = self.stm.transaction().site(site).run(|tx| {
            pool.begin_attempt();
            op(tx, pool)
        });
        pool.commit();
        result
    }
}

impl<S: IntSet<Word = TVar<u64>>> SharedIntSet for StmIntSet<S> {
    type Handle<'s>
        = NodePool
    where
        Self: 's;

    fn handle(&self) -> NodePool {
        self.set.pool()
    }

    fn insert(&self, pool: &mut NodePool, key: u64) -> bool {
        self.run(SITE_INSERT, pool, |tx, pool| self.set.insert(tx, pool, key))
    }

    fn remove(&self, pool: &mut NodePool, key: u64) -> bool {
        self.run(SITE_REMOVE, pool, |tx, pool| self.set.remove(tx, pool, key))
    }

    fn contains(&self, pool: &mut NodePool, key: u64) -> bool {
        self.run(SITE_CONTAINS, pool, |tx, _| self.set.contains(tx, key))
    }
}

/// A set for one thread at a time, without synchronization: the baseline.
#[derive(Debug)]
pub struct Sequential<S> {
    set: S,
    pool: NodePool,
}

impl<S: IntSet<Word = PlainWord>> Sequential<S> {
    /// An empty set sized for `expected` keys.
    pub fn new(expected: usize) -> Self {
        let set = S::with_capacity(expected);
        let pool = set.pool();
        Self { set, pool }
    }

    /// Adds `key`; `false` if present.
    pub fn insert(&mut self, key: u64) -> bool {
        self.pool.begin_attempt();
        let Ok(added) = self.set.insert(&mut Direct, &mut self.pool, key);
        self.pool.commit();
        added
    }

    /// Removes `key`; `false` if absent.
    pub fn remove(&mut self, key: u64) -> bool {
        self.pool.begin_attempt();
        let Ok(removed) = self.set.remove(&mut Direct, &mut self.pool, key);
        self.pool.commit();
        removed
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: u64) -> bool {
        let Ok(found) = self.set.contains(&mut Direct, key);
        found
    }

    /// Every key, ascending.
    pub fn elements(&self) -> Vec<u64> {
        let Ok(keys) = self.set.elements(&mut Direct);
        keys
    }

    /// The underlying structure.
    pub fn set(&self) -> &S {
        &self.set
    }
}

/// A global lock around a sequential set: updates take it exclusively, lookups
/// shared where the lock can share.
pub trait SetLock {
    /// The set behind the lock.
    type Set;

    /// Runs `f` on the set under the lock, exclusively.
    fn update<R>(&self, f: impl FnOnce(&mut Self::Set) -> R) -> R;

    /// Runs `f` on the set under the lock, shared with other lookups if the lock
    /// allows it.
    fn look<R>(&self, f: impl FnOnce(&Self::Set) -> R) -> R;
}

impl<T> SetLock for Mutex<T> {
    type Set = T;

    fn update<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.lock().expect("a benchmark thread panicked"))
    }

    fn look<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.lock().expect("a benchmark thread panicked"))
    }
}

impl<T> SetLock for RwLock<T> {
    type Set = T;

    fn update<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.write().expect("a benchmark thread panicked"))
    }

    fn look<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.read().expect("a benchmark thread panicked"))
    }
}

impl<S, L> SharedIntSet for L
where
    S: IntSet<Word = PlainWord>,
    L: SetLock<Set = Sequential<S>> + Sync,
{
    type Handle<'s>
        = ()
    where
        Self: 's;

    fn handle(&self) {}

    fn insert(&self, _: &mut (), key: u64) -> bool {
        self.update(|set| set.insert(key))
    }

    fn remove(&self, _: &mut (), key: u64) -> bool {
        self.update(|set| set.remove(key))
    }

    fn contains(&self, _: &mut (), key: u64) -> bool {
        self.look(|set| set.contains(key))
    }
}
