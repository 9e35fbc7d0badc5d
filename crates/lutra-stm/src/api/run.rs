//! The transaction loop behind [`Stm::atomically`]: begin, run the closure, commit;
//! on abort roll back, give way (spin, then yield as aborts pile up: see `give_way`),
//! wait as the contention manager and the hooks say, and run again; on `retry` wait
//! for a change first.
//!
//! # Invariants
//! - A panic in the closure rolls the attempt back (the lease's `Drop`), releasing
//!   every lock and allocation, and then propagates.
//! - No thread-local address is held across the retry wait: the descriptor is taken
//!   from the thread's cache when the transaction starts and given back to the cache of
//!   whichever thread finishes it.

use crate::api::hooks::Decision;
use crate::api::transaction::Transaction;
use crate::attempt::abort::{Abort, AbortReason};
use crate::attempt::descriptor::{TxDescriptor, TxOptions};
use crate::global::stm::{Stm, StmInner};
use crate::global::sync::thread_local;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::time::{Duration, Instant};

/// Descriptors kept per thread for reuse (none of an engine whose last [`Stm`]
/// handle is gone: see `StmInner::handles`).
const CACHED_DESCRIPTORS: usize = 4;

thread_local! {
    // Boxed so that taking a descriptor out and putting it back moves a pointer, not
    // the whole descriptor (that copy was a third of an empty transaction's cost).
    #[allow(clippy::vec_box)]
    static CACHE: RefCell<Vec<Box<TxDescriptor>>> = const { RefCell::new(Vec::new()) };
    static RUNNING: Cell<u32> = const { Cell::new(0) };
}

// Every function touching this module's thread-locals is `#[inline(never)]`: a task
// may move to another worker while parked in `retry`, and an inlined thread-local
// access could reuse the old thread's address after the park.

/// Whether the current thread is running a transaction's closure.
///
/// Blocking operations (channels, locks) call this to refuse to block inside a
/// transaction, where waiting could never end (see [`ensure_may_block`]).
#[inline(never)]
pub fn in_transaction() -> bool {
    RUNNING.with(|running| running.get() > 0)
}

/// Clears the mark "running a transaction's closure" of the current thread and returns
/// it: an attempt that yields its task while it waits (see `StmInner::pause`) must not
/// leave the mark on the worker, where the next task would find it.
#[inline(never)]
pub(crate) fn take_running_mark() -> u32 {
    RUNNING.with(|running| running.replace(0))
}

/// Puts back a mark taken by [`take_running_mark`], on whichever thread the task
/// resumed.
#[inline(never)]
pub(crate) fn restore_running_mark(mark: u32) {
    RUNNING.with(|running| running.set(mark));
}

/// Blocking inside a transaction was attempted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockingInTransaction;

impl fmt::Display for BlockingInTransaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "cannot block inside a transaction: use retry to wait for a transactional condition",
        )
    }
}

impl std::error::Error for BlockingInTransaction {}

/// Returns an error when called inside a transaction: what a blocking operation (a
/// lock, a channel) calls before it blocks.
///
/// ```
/// use lutra_stm::{Stm, ensure_may_block};
/// assert!(ensure_may_block().is_ok());
/// Stm::default().atomically(|_| { assert!(ensure_may_block().is_err()); Ok(()) });
/// ```
pub fn ensure_may_block() -> Result<(), BlockingInTransaction> {
    if in_transaction() {
        Err(BlockingInTransaction)
    } else {
        Ok(())
    }
}

const NESTED: &str = "nested atomically: pass the outer Transaction to the inner code \
                      instead (nested transactions flatten into the outer one)";

/// Marks the thread as running a transaction closure while alive.
struct RunningGuard;

impl RunningGuard {
    #[inline(never)]
    fn enter() -> Self {
        RUNNING.with(|running| {
            assert!(running.get() == 0, "{NESTED}");
            running.set(1);
        });
        RunningGuard
    }
}

impl Drop for RunningGuard {
    #[inline(never)]
    fn drop(&mut self) {
        RUNNING.with(|running| running.set(0));
    }
}

/// A descriptor borrowed from the thread cache; rolls back on unwind and returns to
/// the cache when dropped.
struct Lease(Option<Box<TxDescriptor>>);

impl Lease {
    #[inline(never)]
    fn take(stm: &Stm) -> Self {
        let cached = CACHE.with(|cache| {
            let mut cache = cache.borrow_mut();
            let at = cache.iter().position(|desc| desc.stm.id == stm.inner.id)?;
            Some(cache.swap_remove(at))
        });
        let desc = cached.unwrap_or_else(|| {
            Box::new(TxDescriptor::new(stm).unwrap_or_else(|full| panic!("{full}")))
        });
        Self(Some(desc))
    }

    fn desc(&mut self) -> &mut TxDescriptor {
        self.0
            .as_mut()
            .expect("a lease holds its descriptor until dropped")
    }
}

impl Drop for Lease {
    #[inline(never)]
    fn drop(&mut self) {
        let Some(mut desc) = self.0.take() else {
            return;
        };
        desc.rollback(AbortReason::Panic);
        let _ = CACHE.try_with(|cache| {
            let mut cache = cache.borrow_mut();
            // Descriptors of engines nobody holds any more go: they kept the engine
            // alive. (This one's engine has a handle: the transaction's caller.)
            cache.retain(|desc| !desc.stm.abandoned());
            if cache.len() >= CACHED_DESCRIPTORS {
                cache.remove(0);
            }
            cache.push(desc);
        });
    }
}

/// Configures one transaction before running it: see [`Stm::transaction`].
#[must_use = "a transaction builder does nothing until `run`"]
pub struct TxBuilder<'s> {
    stm: &'s Stm,
    options: TxOptions,
}

impl TxBuilder<'_> {
    /// Groups the statistics of this transaction under `site`.
    pub fn site(mut self, site: u32) -> Self {
        self.options.site = site;
        self
    }

    /// Sets the contention priority (higher wins under the priority manager).
    pub fn priority(mut self, priority: i64) -> Self {
        self.options.priority = priority;
        self
    }

    /// Starts the transaction irrevocable.
    pub fn irrevocable(mut self) -> Self {
        self.options.irrevocable = true;
        self
    }

    /// Hints that the transaction only reads: its first attempt keeps no read set
    /// (see [`TxOptions::read_only`]), which spares a long reader a cache line written
    /// per eight reads. A wrong hint costs an attempt, never a wrong result: a write
    /// (or `retry`) runs the transaction again as any other.
    ///
    /// ```
    /// use lutra_stm::{Stm, TVar};
    /// let stm = Stm::default();
    /// let accounts: Vec<TVar<i64>> = (0..100).map(|_| TVar::new(10)).collect();
    /// let total = stm
    ///     .transaction()
    ///     .read_only()
    ///     .run(|tx| accounts.iter().map(|a| tx.read(a)).sum::<Result<i64, _>>());
    /// assert_eq!(total, 1000);
    /// ```
    pub fn read_only(mut self) -> Self {
        self.options.read_only = true;
        self
    }

    /// Runs `body` as a transaction until it commits, and returns its result.
    ///
    /// # Panics
    /// If `body` panics (after rolling back), if called inside another transaction on
    /// this thread, or on a misuse the engine detects (`retry` inside an irrevocable
    /// transaction or in one that read nothing).
    pub fn run<T>(self, mut body: impl FnMut(&mut Transaction<'_>) -> Result<T, Abort>) -> T {
        let stm = self.stm;
        // Checked before the first attempt begins: a nested irrevocable start would
        // wait for the commit gate its own outer transaction holds.
        assert!(!in_transaction(), "{NESTED}");
        let mut lease = Lease::take(stm);
        let mut options = self.options;
        lease.desc().prepare(options);
        let mut first = true;
        loop {
            let desc = lease.desc();
            if desc.wait_for_start() == Decision::Serialize {
                options.irrevocable = true;
                desc.core.escalate_for_scheduler(first);
            }
            if first {
                desc.begin(options)
            } else {
                desc.restart()
            }
            first = false;
            let outcome = {
                let _running = RunningGuard::enter();
                body(&mut Transaction { desc })
            };
            let outcome = match (outcome, desc.doomed()) {
                // Aborts are sticky: a doomed attempt whose closure ignored the error
                // and returned `Ok` is handled as that abort (after `retry`, it waits
                // on what it read instead of committing, or of losing its read set in
                // a failed commit).
                (_, Some(reason)) => Err(Abort::new(reason)),
                (Ok(value), None) => desc.commit().map(|()| value),
                (Err(abort), None) => Err(abort),
            };
            let reason = match outcome {
                Ok(value) => return value,
                Err(abort) => abort.reason(),
            };
            match reason {
                AbortReason::Retry => {
                    if desc.wait_for_change().is_err() {
                        panic!("retry() in a transaction that read nothing can never be woken");
                    }
                }
                AbortReason::Misuse => {
                    desc.rollback(reason);
                    panic!("retry() inside an irrevocable transaction: it cannot wait");
                }
                _ => {
                    desc.rollback(reason);
                    desc.wait_before_restart(reason);
                }
            }
        }
    }
}

impl TxDescriptor {
    /// What a driver does between rolling back an aborted attempt (not a `retry`) and
    /// restarting it, as [`Stm::atomically`] does: give way to the transaction that
    /// caused the abort (spin, then yield through the engine's parking as aborts pile
    /// up: restarting at once is a spin on the conflict while threads outnumber
    /// cores), wait the contention manager's restart delay, then act on the hooks'
    /// decision. A killed attempt also waits for its killer when it restarts.
    pub fn wait_before_restart(&self, reason: AbortReason) {
        let stm = &*self.stm;
        stm.pause(self.aborts_in_row());
        wait(stm, stm.config.manager.restart_delay(self.aborts_in_row()));
        act_on(stm, self.abort_decision(reason));
    }

    /// Asks the start hook until it lets the next attempt start, acting on `Wait` and
    /// `SwitchAway` through the engine's parking; returns `Proceed` or `Serialize`
    /// (then the attempt must run irrevocable).
    #[inline]
    pub fn wait_for_start(&self) -> Decision {
        if !self.stm.hooks_active {
            return Decision::Proceed;
        }
        self.wait_for_start_slow()
    }

    /// For a new transaction with `options`: announces them
    /// ([`TxDescriptor::prepare`]) and waits for the start hook
    /// ([`TxDescriptor::wait_for_start`]). Without hooks, returns `Proceed` at once
    /// and leaves the announcing to [`TxDescriptor::begin`].
    #[inline]
    pub fn prepare_to_start(&mut self, options: TxOptions) -> Decision {
        if !self.stm.hooks_active {
            return Decision::Proceed;
        }
        self.prepare(options);
        self.wait_for_start_slow()
    }

    #[cold]
    fn wait_for_start_slow(&self) -> Decision {
        loop {
            match self.start_decision() {
                decision @ (Decision::Proceed | Decision::Serialize) => return decision,
                other => act_on(&self.stm, other),
            }
        }
    }
}

// Both take the engine by reference: cloning its `Arc` per transaction would bounce
// the reference count's cache line between every core.
fn act_on(stm: &StmInner, decision: Decision) {
    match decision {
        Decision::Wait => wait(stm, Duration::from_micros(1)),
        Decision::SwitchAway => stm.config.parking.switch_away(),
        Decision::Proceed | Decision::Serialize => {}
    }
}

/// Waits `delay` without blocking the worker: spins, yielding now and then.
fn wait(stm: &StmInner, delay: Duration) {
    if delay.is_zero() {
        return;
    }
    let until = Instant::now() + delay;
    stm.wait_until(|| Instant::now() >= until);
}

impl Stm {
    /// Runs `body` as a transaction until it commits, and returns its result.
    ///
    /// `body` may run several times (after conflicts, and after
    /// [`Transaction::retry`]); nested calls on the same thread are not allowed: pass
    /// the [`Transaction`] down instead, so the inner code joins the outer transaction.
    ///
    /// # Panics
    /// As [`TxBuilder::run`].
    ///
    /// ```
    /// let stm = lutra_stm::Stm::default();
    /// let counter = lutra_stm::TVar::new(0u64);
    /// let value = stm.atomically(|tx| {
    ///     tx.modify(&counter, |n| n + 1)?;
    ///     tx.read(&counter)
    /// });
    /// assert_eq!(value, 1);
    /// ```
    pub fn atomically<T>(&self, body: impl FnMut(&mut Transaction<'_>) -> Result<T, Abort>) -> T {
        self.transaction().run(body)
    }

    /// A builder for a transaction with a site, a priority or irrevocability.
    ///
    /// ```
    /// let stm = lutra_stm::Stm::default();
    /// let log = lutra_stm::TVar::new(Vec::<String>::new());
    /// stm.transaction().site(7).irrevocable().run(|tx| {
    ///     println!("irrevocable: runs exactly once");
    ///     tx.modify(&log, |mut lines| { lines.push("done".into()); lines })
    /// });
    /// assert_eq!(stm.stats().by_site[&7].irrevocable_commits, 1);
    /// ```
    pub fn transaction(&self) -> TxBuilder<'_> {
        TxBuilder {
            stm: self,
            options: TxOptions::default(),
        }
    }
}

/// Runs `body` as a transaction of the process-wide engine ([`Stm::global`]).
///
/// ```
/// let hits = lutra_stm::TVar::new(0u32);
/// lutra_stm::atomically(|tx| tx.modify(&hits, |n| n + 1));
/// assert_eq!(lutra_stm::atomically(|tx| tx.read(&hits)), 1);
/// ```
pub fn atomically<T>(body: impl FnMut(&mut Transaction<'_>) -> Result<T, Abort>) -> T {
    Stm::global().atomically(body)
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use crate::{Config, Stm, TVar};
    use std::sync::Arc;

    /// A dropped engine was kept alive, with its record table, by the descriptor this
    /// thread cached for it, until the thread exited.
    #[test]
    fn a_dropped_engine_is_freed_at_the_threads_next_transaction() {
        let var = TVar::new(1u64);
        let first = Stm::new(Config::default().with_orec_bits(4));
        let clone = first.clone();
        assert_eq!(first.atomically(|tx| tx.read(&var)), 1);
        let engine = Arc::downgrade(&first.inner);
        drop(first);
        assert_eq!(
            clone.atomically(|tx| tx.read(&var)),
            1,
            "a clone still works"
        );
        drop(clone);
        let second = Stm::new(Config::default().with_orec_bits(4));
        assert_eq!(second.atomically(|tx| tx.read(&var)), 1);
        assert!(
            engine.upgrade().is_none(),
            "the thread's descriptor cache kept the dropped engine alive"
        );
        // A handle made from a descriptor counts too.
        let third = Stm::new(Config::default().with_orec_bits(4));
        let from_descriptor = crate::TxDescriptor::new(&third).unwrap().stm();
        let engine = Arc::downgrade(&third.inner);
        drop(third);
        assert_eq!(from_descriptor.atomically(|tx| tx.read(&var)), 1);
        drop(from_descriptor);
        assert_eq!(second.atomically(|tx| tx.read(&var)), 1);
        assert!(engine.upgrade().is_none());
    }
}
