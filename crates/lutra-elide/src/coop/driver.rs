//! Running a critical section under a cooperative lock: the outermost level (which
//! owns the transaction and the lock's door) and nested levels (which flatten).
//!
//! # Protocol: outermost section (`cx_optimistic` / `cx_exclusive`)
//! 1. Run a transaction (irrevocable from the start for `cx_exclusive`).
//! 2. At the start of every attempt, [`Driver::begin_attempt`]: an irrevocable attempt
//!    closes the lock's door (`owner` = 1) and enters exclusively; any other attempt
//!    first reopens a door it closed in an earlier attempt, then enters
//!    optimistically.
//! 3. The section body runs; an exclusion need anywhere inside it (I/O, a nested
//!    `cx_exclusive`, [`CoopTx::need_exclusive`](super::CoopTx::need_exclusive))
//!    restarts the transaction irrevocable, so step 2 runs again in exclusive mode.
//! 4. After the transaction committed (or unwound), the driver reopens the door it
//!    closed (`Drop`), so no entrant waits for a section that is over.
//!
//! # Invariants
//! - A door closed by a driver is reopened by the same driver, before its next
//!   optimistic attempt or when it is dropped: never left closed.
//! - Nested levels never touch the door: only the outermost level's lock is held at
//!   the door; nested locks are held through their `generation` word (module
//!   `lock.rs`), which the transaction's rollback undoes by itself.

use super::lock::{CoopLock, Mode};
use lutra_stm::{Abort, Stm, Transaction, TxBuilder};

/// The outermost level of a cooperative section: enters the lock at the start of
/// each attempt and owns the lock's door while the section runs exclusively. For code
/// that drives its own attempts (the C API); Rust programs use
/// [`CoopLock::optimistic`] and [`CoopLock::exclusive`], which use it.
#[derive(Debug)]
pub struct Driver<'l> {
    lock: &'l CoopLock,
    door_closed: bool,
}

impl<'l> Driver<'l> {
    /// A driver for one outermost section on `lock`. Create it outside the
    /// transaction and keep it until the transaction is over.
    pub fn new(lock: &'l CoopLock) -> Self {
        Self {
            lock,
            door_closed: false,
        }
    }

    /// Step 2 of the module protocol: call first in every attempt of the section's
    /// transaction. Returns the attempt's mode.
    ///
    /// # Errors
    /// The abort that dooms the attempt (see [`CoopLock::enter`]).
    pub fn begin_attempt(&mut self, tx: &mut Transaction<'_>) -> Result<Mode, Abort> {
        match Mode::of(tx) {
            Mode::Exclusive if !self.door_closed => {
                self.lock.close_door();
                self.door_closed = true;
            }
            Mode::Optimistic if self.door_closed => self.reopen(),
            _ => {}
        }
        self.lock.enter(tx)
    }

    fn reopen(&mut self) {
        self.lock.open_door();
        self.door_closed = false;
    }
}

impl Drop for Driver<'_> {
    fn drop(&mut self) {
        if self.door_closed {
            self.reopen();
        }
    }
}

impl CoopLock {
    /// Runs `body` as a critical section under this lock, optimistically first: as a
    /// transaction, beside other optimistic holders (the paper's `cx_optimistic`
    /// from a non-transactional thread). If `body` needs exclusion
    /// ([`CoopTx::need_exclusive`](super::CoopTx::need_exclusive),
    /// [`CoopTx::io`](super::CoopTx::io), a nested exclusive entry), the section
    /// restarts and runs again exclusively. Returns `body`'s result once committed.
    ///
    /// `body` may run several times (after conflicts, and once more exclusively);
    /// work that must not repeat goes through [`CoopTx::io`](super::CoopTx::io).
    ///
    /// # Panics
    /// As [`TxBuilder::run`]: inside a transaction on this thread (use
    /// [`CoopLock::nested`] there), or if `body` panics.
    pub fn optimistic<T>(
        &self,
        stm: &Stm,
        body: impl FnMut(&mut Transaction<'_>) -> Result<T, Abort>,
    ) -> T {
        self.run(stm.transaction(), body)
    }

    /// Runs `body` as a critical section holding this lock exclusively (the paper's
    /// `cx_exclusive` from a non-transactional thread): an irrevocable transaction
    /// that closes the lock's door, so optimistic entrants wait, and writes the lock
    /// word, so optimistic holders already inside are aborted. `body` runs once
    /// (unless it aborts explicitly) and may do I/O. Returns `body`'s result.
    ///
    /// Irrevocable transactions are one at a time per engine, and updating
    /// transactions of any lock cannot commit while one runs: an exclusive section
    /// excludes more than its own lock's holders (as libitm's serial mode does).
    ///
    /// # Panics
    /// As [`CoopLock::optimistic`].
    ///
    /// ```
    /// use lutra_elide::coop::{CoopLock, CoopTx, Mode};
    /// use lutra_stm::{Stm, TVar};
    /// let (stm, lock, log) = (Stm::default(), CoopLock::new(), TVar::new(0u32));
    /// lock.exclusive(&stm, |tx| {
    ///     assert_eq!(tx.mode(), Mode::Exclusive);
    ///     tx.io(|| println!("runs exactly once"))?;
    ///     tx.modify(&log, |n| n + 1)
    /// });
    /// assert_eq!(lock.generation(), 1);
    /// ```
    pub fn exclusive<T>(
        &self,
        stm: &Stm,
        body: impl FnMut(&mut Transaction<'_>) -> Result<T, Abort>,
    ) -> T {
        self.run(stm.transaction().irrevocable(), body)
    }

    /// Runs `body` as a critical section under this lock in a transaction configured
    /// by `builder` (its site and priority; `.irrevocable()` makes the section
    /// exclusive from the start). Returns `body`'s result once committed.
    ///
    /// # Panics
    /// As [`CoopLock::optimistic`].
    pub fn run<T>(
        &self,
        builder: TxBuilder<'_>,
        mut body: impl FnMut(&mut Transaction<'_>) -> Result<T, Abort>,
    ) -> T {
        let mut driver = Driver::new(self);
        builder.run(|tx| {
            driver.begin_attempt(tx)?;
            body(tx)
        })
    }

    /// Runs `body` under this lock inside the running transaction `tx` (a nested
    /// cxspinlock, or one taken by a transactional thread): the lock joins `tx`
    /// (flattening), in `tx`'s mode. Returns `body`'s result.
    ///
    /// # Errors
    /// The abort that dooms the attempt: return it with `?` so that the outermost
    /// transaction restarts (an exclusion need inside `body` restarts the outermost
    /// level exclusively).
    pub fn nested<T>(
        &self,
        tx: &mut Transaction<'_>,
        body: impl FnOnce(&mut Transaction<'_>) -> Result<T, Abort>,
    ) -> Result<T, Abort> {
        self.enter(tx)?;
        body(tx)
    }

    /// Runs `body` holding this lock exclusively inside the running transaction `tx`
    /// (the paper's `cx_exclusive` from a transactional thread): if `tx` runs
    /// optimistically, the outermost transaction restarts exclusively first ("revert
    /// outer transaction to use mutual exclusion"). Returns `body`'s result.
    ///
    /// # Errors
    /// As [`CoopLock::nested`]; in optimistic mode always the restart.
    pub fn nested_exclusive<T>(
        &self,
        tx: &mut Transaction<'_>,
        body: impl FnOnce(&mut Transaction<'_>) -> Result<T, Abort>,
    ) -> Result<T, Abort> {
        super::CoopTx::need_exclusive(tx)?;
        self.nested(tx, body)
    }
}
