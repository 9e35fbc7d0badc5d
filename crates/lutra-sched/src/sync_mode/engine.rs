//! The runtime's private transaction driver: transactions on an engine of their own
//! (never [`Stm::global`]), driven through a [`TxDescriptor`] rather than
//! `Stm::atomically`, so that they are kept apart from user transactions.
//!
//! Kept apart means three things:
//! - A user's irrevocable transaction (which drains the transactions of its own
//!   engine) never waits for, nor makes wait, a runtime transaction.
//! - A runtime transaction may run while the current thread is inside a user
//!   transaction's closure (a wake-up or a spawn there; a native task that suspended
//!   inside one): the engine's "no nested `atomically`" mark is not consulted.
//! - Runtime transactions wait with the engine's `retry`, parking the OS thread
//!   ([`lutra_stm::ThreadParking`]), never a task: they hold no task-level state.
//!
//! # Invariants
//! - A runtime transaction never suspends the task that runs it (its engine parks and
//!   yields threads), so the descriptor taken from the thread's cache at its start is
//!   given back on the same thread.
//! - Runtime transactions do not nest: a body that starts another one panics.
//! - Only words of this engine's structures (`TVar<usize>` fields of nodes and cells)
//!   are accessed; a node or value box is freed through `free_on_commit` (after every
//!   transaction that could read it has ended) or, if never published, by its owner.
//!
//! # Protocol (one transaction, as `Stm::atomically`)
//! 1. Take a descriptor of this engine from the thread's cache (or make one); begin.
//! 2. Run the body. `Ok` and not doomed: commit; done on success.
//! 3. `retry`: roll back and park until a word read changes, then restart (2).
//! 4. Any other abort: roll back, give way as the contention manager says, restart.
//! 5. A panic in the body rolls back; the descriptor goes back to the cache either way.

use crate::sync::thread_local;
use lutra_stm::{Abort, AbortReason, Config, Release, Stats, Stm, TVar, TxDescriptor, TxOptions};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};

/// Descriptors cached per thread (one per engine recently used on that thread).
const CACHED_DESCRIPTORS: usize = 4;

/// The private engine's ownership-record table: 2^16 records (the runtime's structures
/// are small; the default 2^20 would cost 8 MiB per runtime).
#[cfg(not(feature = "shuttle"))]
const OREC_BITS: u32 = 16;
/// Under the model checks, 4 records, so that words collide and each schedule builds
/// its engine quickly.
#[cfg(feature = "shuttle")]
const OREC_BITS: u32 = 2;

thread_local! {
    #[allow(clippy::vec_box)]
    static CACHE: RefCell<Vec<(u64, Box<TxDescriptor>)>> = const { RefCell::new(Vec::new()) };
    static RUNNING: Cell<bool> = const { Cell::new(false) };
}

/// A private engine for the runtime's own transactions.
pub(crate) struct TxEngine {
    stm: Stm,
    /// Identifies this engine in the threads' descriptor caches.
    key: u64,
}

impl TxEngine {
    pub(crate) fn new() -> Self {
        let config = Config::default().with_orec_bits(OREC_BITS);
        // Under the model checks a schedule has three threads: a few descriptors do.
        #[cfg(feature = "shuttle")]
        let config = config.with_max_descriptors(8);
        static NEXT_KEY: AtomicU64 = AtomicU64::new(1);
        Self {
            stm: Stm::new(config),
            key: NEXT_KEY.fetch_add(1, Ordering::Relaxed),
        }
    }

    pub(crate) fn stats(&self) -> Stats {
        self.stm.stats()
    }

    /// Runs `body` as a transaction of this engine until it commits (see the module's
    /// protocol); statistics are counted under `site`.
    ///
    /// # Panics
    /// If `body` panics (after rolling back), or if called from inside another body.
    pub(crate) fn run<R>(
        &self,
        site: u32,
        mut body: impl FnMut(&mut Tx<'_>) -> Result<R, Abort>,
    ) -> R {
        let mut lease = Lease::take(self);
        let desc = lease.desc();
        desc.begin(TxOptions::site(site));
        loop {
            let outcome = body(&mut Tx { desc: &mut *desc });
            let outcome = match (outcome, desc.doomed()) {
                (_, Some(reason)) => Err(reason),
                (Ok(value), None) => desc.commit().map(|()| value).map_err(|a| a.reason()),
                (Err(abort), None) => Err(abort.reason()),
            };
            match outcome {
                Ok(value) => return value,
                Err(AbortReason::Retry) => desc
                    .wait_for_change()
                    .expect("a runtime transaction retried without reading anything"),
                Err(reason) => {
                    desc.rollback(reason);
                    desc.wait_before_restart(reason);
                }
            }
            desc.restart();
        }
    }
}

/// The committed value of `var`, read without a transaction: a hint, for a fast path
/// that must not pay for a transaction when nothing changed (the transactional run
/// queue's owner-only yield). Both of the engine's designs write back at commit, so
/// the word holds the last committed value, or the one a commit is writing back; a
/// caller acts on it only through a transaction, or only to decide whether to run one.
#[inline]
pub(crate) fn peek(var: &TVar<usize>) -> usize {
    // SAFETY: a `TVar`'s word is an `AtomicUsize` (see `Tx::write`), aligned and alive
    // as long as `var`; the engine itself writes it atomically.
    unsafe { std::sync::atomic::AtomicUsize::from_ptr(var.as_word_ptr() as *mut usize) }
        // ORDERING: pairs with the committing thread's write-back: a push that
        // happens before this load (by any synchronisation) is seen.
        .load(Ordering::Acquire)
}

/// One attempt of a runtime transaction: word reads and writes of `TVar<usize>`
/// fields, `retry`, and freeing memory on commit.
pub(crate) struct Tx<'d> {
    desc: &'d mut TxDescriptor,
}

impl Tx<'_> {
    /// Reads `var`.
    #[inline]
    pub(crate) fn read(&mut self, var: &TVar<usize>) -> Result<usize, Abort> {
        // SAFETY: a `TVar`'s word is aligned and lives as long as `var`; the
        // structures holding it access it only through this engine (module
        // invariant), and a node or box holding it is freed only after every
        // transaction that could reach it has ended.
        unsafe { self.desc.load(var.as_word_ptr()) }
    }

    /// Writes `value` to `var` (at commit).
    #[inline]
    pub(crate) fn write(&mut self, var: &TVar<usize>, value: usize) -> Result<(), Abort> {
        // SAFETY: as in `read`; the word is an `AtomicUsize`, so writing through a
        // shared reference is allowed.
        unsafe {
            self.desc
                .store(var.as_word_ptr() as *mut usize, value, usize::MAX)
        }
    }

    /// Abandons the attempt and waits for a change to something it read.
    pub(crate) fn retry<T>(&mut self) -> Result<T, Abort> {
        Err(self.desc.doom(AbortReason::Retry))
    }

    /// Hands the block at `addr` to `release` once this attempt has committed and no
    /// transaction can still read it.
    ///
    /// None of the block's words is written (size 0 for the engine): the attempt must
    /// itself write the word that made the block reachable (a `next`, a `head`, a
    /// cell's `current`), so that every transaction that reached the block through it
    /// conflicts with this one; one that read it before the commit still sees a
    /// consistent snapshot, in which the block is alive.
    ///
    /// # Safety
    /// The block must be owned by the structure, unreachable once this attempt
    /// commits, handed over only once, and `release` must be the way to free it.
    pub(crate) unsafe fn free_on_commit(
        &mut self,
        addr: usize,
        release: Release,
    ) -> Result<(), Abort> {
        // SAFETY: forwarded contract; with size 0 no word of the block is accessed.
        unsafe { self.desc.free_on_commit(addr, 0, release) }
    }

    /// Hands the block at `addr` to `release` if this attempt does not commit.
    pub(crate) fn free_on_abort(&mut self, addr: usize, release: Release) {
        self.desc.record_allocation(addr, 0, release);
    }
}

/// A descriptor borrowed from the thread's cache, with the "running a runtime
/// transaction" mark; rolls back and returns both when dropped (also on unwind).
struct Lease {
    key: u64,
    desc: Option<Box<TxDescriptor>>,
}

impl Lease {
    #[inline(never)]
    fn take(engine: &TxEngine) -> Self {
        RUNNING.with(|running| {
            assert!(
                !running.replace(true),
                "lutra_sched::sync_mode operations do not nest: a SyncCell or SyncQueue closure \
                 used another synchronised structure"
            );
        });
        let cached = CACHE.with(|cache| {
            let mut cache = cache.borrow_mut();
            let at = cache.iter().position(|(key, _)| *key == engine.key)?;
            Some(cache.swap_remove(at).1)
        });
        let desc = cached.unwrap_or_else(|| {
            Box::new(TxDescriptor::new(&engine.stm).unwrap_or_else(|full| panic!("{full}")))
        });
        Self {
            key: engine.key,
            desc: Some(desc),
        }
    }

    fn desc(&mut self) -> &mut TxDescriptor {
        self.desc.as_mut().expect("a lease holds its descriptor")
    }
}

impl Drop for Lease {
    #[inline(never)]
    fn drop(&mut self) {
        if let Some(mut desc) = self.desc.take() {
            desc.rollback(AbortReason::Panic);
            let key = self.key;
            let _ = CACHE.try_with(|cache| {
                let mut cache = cache.borrow_mut();
                if cache.len() >= CACHED_DESCRIPTORS {
                    cache.remove(0);
                }
                cache.push((key, desc));
            });
        }
        let _ = RUNNING.try_with(|running| running.set(false));
    }
}
