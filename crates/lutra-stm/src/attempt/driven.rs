//! For drivers that run a transaction's attempts themselves, one call at a time, and
//! must never block their thread: a Lua process's `lutra.atomic` runs each attempt
//! inside one call into Lua on a scheduler worker, and waits in `retry` by suspending
//! its coroutine, not the worker.
//!
//! - [`TxDescriptor::transaction`]: the running attempt as a [`Transaction`](crate::Transaction) (typed
//!   `TVar` access), borrowed for as long as the driver needs it.
//! - [`TxDescriptor::checkpoint`] / [`TxDescriptor::roll_back_to`] /
//!   [`TxDescriptor::keep`]: `or_else` and partial rollback split into calls, for
//!   drivers whose branches run between two calls into the engine.
//! - [`TxDescriptor::watch_for_change`]: `retry` that registers a waker for the read
//!   set and returns (the [`ChangeWatch`] unregisters when dropped), instead of
//!   parking through [`Parking`](crate::Parking) as
//!   [`TxDescriptor::wait_for_change`] does.
//!
//! # Protocol (a non-blocking `retry`)
//! 1. The attempt is doomed with [`AbortReason::Retry`] (by [`Transaction::retry`](crate::Transaction::retry)).
//! 2. `watch_for_change(waker)` takes the read set, rolls the attempt back, registers
//!    `waker` in the wait table (see `waiting.rs`) and returns the watch. If a watched
//!    record had already changed, `waker` has been woken before it returns.
//! 3. The driver suspends its task (the task's scheduler keeps a wake that came before
//!    the suspension), keeps the watch alive while suspended, drops it when the task
//!    runs again, and begins the transaction anew.

use crate::attempt::abort::{Abort, AbortReason};
use crate::attempt::descriptor::TxDescriptor;
use crate::global::stm::StmInner;
use crate::global::waiting::Registration;
use crate::sets::write_set;
use std::fmt;
use std::sync::Arc;
use std::task::Waker;

/// Where the running attempt's writes stood when [`TxDescriptor::checkpoint`] was
/// called. Checkpoints nest: close them newest first, each exactly once, with
/// [`TxDescriptor::roll_back_to`] or [`TxDescriptor::keep`].
#[derive(Debug)]
#[must_use = "a checkpoint must be closed with roll_back_to or keep"]
pub struct Checkpoint {
    writes: write_set::Checkpoint,
    allocations: usize,
    frees: usize,
    serial: u64,
}

/// A registration of a waker for the read set of a transaction that called `retry`
/// ([`TxDescriptor::watch_for_change`]). Keep it alive while waiting; dropping it
/// unregisters the waker.
pub struct ChangeWatch {
    stm: Arc<StmInner>,
    registration: Registration,
}

impl ChangeWatch {
    /// Whether a commit changed something the transaction read (or one had already
    /// changed at registration): the waker has then been woken.
    pub fn has_fired(&self) -> bool {
        self.registration.notified()
    }
}

impl Drop for ChangeWatch {
    fn drop(&mut self) {
        self.stm.waits.unregister(&self.registration);
    }
}

impl fmt::Debug for ChangeWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChangeWatch")
            .field("fired", &self.has_fired())
            .finish_non_exhaustive()
    }
}

impl TxDescriptor {
    /// Opens a checkpoint of the running attempt's writes, allocations and frees (its
    /// reads are never undone: they stay in the read set).
    ///
    /// # Panics
    /// If no attempt is active.
    pub fn checkpoint(&mut self) -> Checkpoint {
        assert!(
            self.core.mode().is_active(),
            "checkpoint outside an attempt"
        );
        Checkpoint {
            writes: self.core.writes.checkpoint(self.core.allocations.len()),
            allocations: self.core.allocations.len(),
            frees: self.core.frees.len(),
            serial: self.core.status.serial(),
        }
    }

    /// Closes `checkpoint` undoing every write, allocation and free made since it was
    /// opened; a doom by `retry` is lifted (what `or_else` does before its second
    /// branch), any other doom stays.
    ///
    /// # Panics
    /// If `checkpoint` belongs to another attempt (the attempt ended since).
    pub fn roll_back_to(&mut self, checkpoint: Checkpoint) {
        self.check_checkpoint(&checkpoint);
        self.core.writes.roll_back_to(checkpoint.writes);
        for block in self.core.allocations.drain(checkpoint.allocations..) {
            // SAFETY: allocated by this attempt after the checkpoint; the writes that
            // could refer to it were just undone, and nothing was committed.
            unsafe { (block.release)(block.addr, block.size) };
        }
        self.core.frees.truncate(checkpoint.frees);
        if self.core.doomed == Some(AbortReason::Retry) {
            self.core.doomed = None;
        }
    }

    /// Closes `checkpoint` keeping what was done since.
    ///
    /// # Panics
    /// As [`TxDescriptor::roll_back_to`].
    pub fn keep(&mut self, checkpoint: Checkpoint) {
        self.check_checkpoint(&checkpoint);
        self.core.writes.keep(checkpoint.writes);
    }

    fn check_checkpoint(&self, checkpoint: &Checkpoint) {
        assert!(
            self.core.mode().is_active() && self.core.status.serial() == checkpoint.serial,
            "checkpoint of another attempt"
        );
    }

    /// For a transaction that called `retry`: rolls the attempt back and registers
    /// `waker` to be woken when a commit changes a location the attempt read; returns
    /// at once (see the module's protocol). Begin the transaction again once woken.
    ///
    /// # Errors
    /// [`AbortReason::Misuse`] if the attempt read nothing (nothing could ever wake it)
    /// or is irrevocable; the attempt is rolled back either way.
    ///
    /// ```
    /// use lutra_stm::{Stm, TVar, TxDescriptor, TxOptions};
    /// use std::sync::Arc;
    /// use std::task::{Wake, Waker};
    /// struct Flag(std::sync::atomic::AtomicBool);
    /// impl Wake for Flag {
    ///     fn wake(self: Arc<Self>) { self.0.store(true, std::sync::atomic::Ordering::SeqCst) }
    /// }
    /// let stm = Stm::default();
    /// let ready = TVar::new(false);
    /// let mut desc = TxDescriptor::new(&stm).unwrap();
    /// desc.begin(TxOptions::default());
    /// let mut tx = desc.transaction();
    /// assert!(!tx.read(&ready).unwrap());
    /// let _ = tx.retry::<()>();
    /// let flag = Arc::new(Flag(Default::default()));
    /// let watch = desc.watch_for_change(Waker::from(flag.clone())).unwrap();
    /// assert!(!watch.has_fired());
    /// stm.atomically(|tx| tx.write(&ready, true));
    /// assert!(watch.has_fired() && flag.0.load(std::sync::atomic::Ordering::SeqCst));
    /// ```
    pub fn watch_for_change(&mut self, waker: Waker) -> Result<ChangeWatch, Abort> {
        let watched = self.roll_back_for_retry()?;
        let registration = self.stm.waits.register(&self.stm.orecs, &watched, waker);
        Ok(ChangeWatch {
            stm: self.stm.clone(),
            registration,
        })
    }
}
