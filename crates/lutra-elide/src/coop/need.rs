//! Exclusion needs inside a cooperative section: the paper's `NEED_EXCLUSIVE`
//! restart, as methods on the engine's [`Transaction`].
//!
//! # Protocol
//! 1. Exclusive mode (the attempt is irrevocable): nothing to do, go on.
//! 2. Optimistic mode: abandon the attempt and restart the outermost transaction
//!    irrevocable ([`Transaction::restart_irrevocable`]); every cooperative lock it
//!    enters again enters exclusively. The engine carries the mode to the restart, so
//!    even a transaction that no cooperative lock started (a plain `atomically`)
//!    cannot loop on the need, as the paper's naked `xbegin` could.

use super::lock::Mode;
use lutra_stm::{Abort, Transaction};

/// Cooperative-lock operations on a running transaction.
pub trait CoopTx {
    /// The mode the current critical section runs in.
    fn mode(&self) -> Mode;

    /// Makes sure the section runs exclusively: returns `Ok` in exclusive mode; in
    /// optimistic mode restarts the outermost transaction exclusively (see the module
    /// protocol) and returns that abort.
    ///
    /// # Errors
    /// The restart (return it with `?`), or the abort that already dooms the attempt.
    fn need_exclusive(&mut self) -> Result<(), Abort>;

    /// Runs `op`, an operation that must not be repeated (I/O), exactly once: in
    /// exclusive mode now; in optimistic mode after restarting exclusively. Returns
    /// `op`'s result.
    ///
    /// # Errors
    /// As [`CoopTx::need_exclusive`]; `op` has not run then.
    ///
    /// ```
    /// use lutra_elide::coop::{CoopLock, CoopTx};
    /// use std::cell::Cell;
    /// let (stm, lock) = (lutra_stm::Stm::default(), CoopLock::new());
    /// let (runs, writes) = (Cell::new(0), Cell::new(0));
    /// lock.optimistic(&stm, |tx| {
    ///     runs.set(runs.get() + 1);
    ///     tx.io(|| writes.set(writes.get() + 1))
    /// });
    /// assert_eq!((runs.get(), writes.get()), (2, 1));
    /// ```
    fn io<R>(&mut self, op: impl FnOnce() -> R) -> Result<R, Abort>;
}

impl CoopTx for Transaction<'_> {
    fn mode(&self) -> Mode {
        Mode::of(self)
    }

    fn need_exclusive(&mut self) -> Result<(), Abort> {
        match Mode::of(self) {
            Mode::Exclusive => Ok(()),
            Mode::Optimistic => self.restart_irrevocable(),
        }
    }

    fn io<R>(&mut self, op: impl FnOnce() -> R) -> Result<R, Abort> {
        self.need_exclusive()?;
        Ok(op())
    }
}
