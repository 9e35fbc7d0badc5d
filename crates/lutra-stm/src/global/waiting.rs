//! Blocking `retry`: a transaction that retried sleeps until a commit writes a
//! location it read (Harris et al.'s `retry`; seed 001 shows what busy-waiting costs).
//!
//! Waiters register in buckets hashed from the ownership records they read; a commit
//! wakes, in the buckets of the records it wrote, the waiters that read one of those
//! records (not every waiter of a bucket: records that share a bucket wake nobody
//! spuriously).
//!
//! # Protocol (no lost wake-up; nothing to pay for a commit when nobody waits)
//! Waiter:
//! 1. Register in every bucket of its read set; bump the bucket and global counts
//!    (sequentially consistent).
//! 2. Re-read every record with a read-modify-write that changes nothing: if one no
//!    longer holds the version that was read, or is locked (its owner may be
//!    committing a change), consider it changed: unregister and run again.
//! 3. Otherwise park until notified; then unregister.
//!
//! Committer (an update commit, which has locked every record it writes):
//! 1. Once all its records are locked, load the global count ([`WaitTable::has_waiters`]).
//!    If it is 0, stop there: the commit costs nothing more.
//! 2. Otherwise, after releasing its records with the new version, notify the waiters
//!    of every written record's bucket whose count is non-zero.
//!
//! Either the committer's step 1 sees the waiter's registration, or the waiter's step
//! 2 sees the committer's lock or its new version: a read-modify-write reads the
//! latest value of the record, so if it comes before the committer's lock in the
//! record's modification order, the lock's CAS reads from it (a release sequence) and
//! the waiter's registration happens before the committer's step 1. A lock seen in
//! step 2 costs at most a spurious wake-up (the holder may abort): the transaction
//! runs again and meets the record as any reader does.
//!
//! A driver that must not block its thread (a Lua process on a scheduler worker) uses
//! steps 1 and 2 alone ([`WaitTable::register`], through
//! [`TxDescriptor::watch_for_change`](crate::TxDescriptor::watch_for_change)): when
//! step 2 finds a change it wakes the waker itself; the waiter then suspends its task
//! its own way and unregisters (step 3's end) when it runs again.

use crate::global::orec::{LockWord, OrecTable};
use crate::global::parking::Parking;
use crate::global::sync::{AtomicBool, AtomicUsize, Mutex, Ordering, lock};
use std::sync::Arc;
use std::task::Waker;

/// One record read before a `retry`, with the version seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Watched {
    pub(crate) orec: usize,
    pub(crate) version: u64,
}

struct Waiter {
    notified: AtomicBool,
    waker: Waker,
    /// The records watched, sorted, without repeats.
    orecs: Box<[usize]>,
}

impl Waiter {
    fn watches(&self, orec: usize) -> bool {
        self.orecs.binary_search(&orec).is_ok()
    }

    fn notify(&self) {
        self.notified.store(true, Ordering::SeqCst);
        self.waker.wake_by_ref();
    }
}

#[derive(Default)]
struct Bucket {
    count: AtomicUsize,
    waiters: Mutex<Vec<Arc<Waiter>>>,
}

/// One waiter's place in the buckets of the records it watches.
pub(crate) struct Registration {
    waiter: Arc<Waiter>,
    buckets: Vec<usize>,
}

impl Registration {
    /// Whether a change of a watched record was seen (by a committer or at
    /// registration).
    pub(crate) fn notified(&self) -> bool {
        self.waiter.notified.load(Ordering::SeqCst)
    }
}

pub(crate) struct WaitTable {
    buckets: Box<[Bucket]>,
    total: AtomicUsize,
}

impl WaitTable {
    pub(crate) fn new(orecs: usize) -> Self {
        let size = orecs.clamp(1, 1024);
        Self {
            buckets: (0..size).map(|_| Bucket::default()).collect(),
            total: AtomicUsize::new(0),
        }
    }

    fn bucket_of(&self, orec: usize) -> usize {
        orec % self.buckets.len()
    }

    /// Blocks the current task until one of `watched` changes (the waiter's side).
    pub(crate) fn wait(&self, orecs: &OrecTable, watched: &[Watched], parking: &dyn Parking) {
        let registration = self.register(orecs, watched, parking.waker());
        while !registration.waiter.notified.load(Ordering::SeqCst) {
            parking.park();
        }
        self.unregister(&registration);
    }

    /// Steps 1 and 2 of the waiter's side: registers `waker` for `watched` and, if one
    /// of them has already changed, marks the registration notified and wakes `waker`
    /// at once. The caller must [`unregister`](WaitTable::unregister) it.
    pub(crate) fn register(
        &self,
        orecs: &OrecTable,
        watched: &[Watched],
        waker: Waker,
    ) -> Registration {
        let mut records: Vec<usize> = watched.iter().map(|w| w.orec).collect();
        records.sort_unstable();
        records.dedup();
        let waiter = Arc::new(Waiter {
            notified: AtomicBool::new(false),
            waker,
            orecs: records.into_boxed_slice(),
        });
        let mut buckets: Vec<usize> = waiter
            .orecs
            .iter()
            .map(|&orec| self.bucket_of(orec))
            .collect();
        buckets.sort_unstable();
        buckets.dedup();
        self.total.fetch_add(1, Ordering::SeqCst);
        for &bucket in &buckets {
            let bucket = &self.buckets[bucket];
            lock(&bucket.waiters).push(waiter.clone());
            bucket.count.fetch_add(1, Ordering::SeqCst);
        }
        let changed = watched.iter().any(|w| {
            // ORDERING: step 2 (see the module header): the read-modify-write reads the
            // record's latest value and heads a release sequence that a committer's
            // lock CAS (acquire) reads from, if it comes later.
            match LockWord::decode(orecs.record(w.orec).fetch_add(0, Ordering::SeqCst)) {
                LockWord::Unlocked { version } => version != w.version,
                // Its owner may be committing: the committer's step 1 may have run
                // before this registration.
                LockWord::Locked { .. } => true,
            }
        });
        if changed {
            waiter.notify();
        }
        Registration { waiter, buckets }
    }

    /// Step 3's end: removes a registration from its buckets.
    pub(crate) fn unregister(&self, registration: &Registration) {
        for &bucket in &registration.buckets {
            let bucket = &self.buckets[bucket];
            lock(&bucket.waiters).retain(|other| !Arc::ptr_eq(other, &registration.waiter));
            bucket.count.fetch_sub(1, Ordering::SeqCst);
        }
        self.total.fetch_sub(1, Ordering::SeqCst);
    }

    /// The committer's step 1: whether anybody waits. Call it once every record the
    /// commit writes is locked, and notify (step 2) when it returns true.
    #[inline]
    pub(crate) fn has_waiters(&self) -> bool {
        // ORDERING: see the module header; sequentially consistent with the waiter's
        // increment.
        self.total.load(Ordering::SeqCst) != 0
    }

    /// The committer's step 2: wakes the waiters that watch a record a commit wrote.
    #[cold]
    pub(crate) fn notify_writes(&self, written: impl Iterator<Item = usize>) {
        for orec in written {
            let bucket = &self.buckets[self.bucket_of(orec)];
            if bucket.count.load(Ordering::SeqCst) > 0 {
                lock(&bucket.waiters)
                    .iter()
                    .filter(|waiter| waiter.watches(orec))
                    .for_each(|waiter| waiter.notify());
            }
        }
    }
}
