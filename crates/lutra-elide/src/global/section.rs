//! The face of a running transaction of the elided lock, handed to each step: reads and
//! writes of [`TVar`]s, whatever runs the transaction (a software transaction, a
//! hardware one, or the lock).
//!
//! # Invariants
//! - A step sees the same interface whether it runs speculatively or under the lock;
//!   [`Section::is_locked`] tells which.
//! - An abort requested here (the lock was taken, an injected abort, a need for the
//!   lock) records its class before dooming the attempt, so the policy classifies it
//!   without guessing from the engine's reason.

use crate::global::backend::{Speculation, rtm};
use crate::global::lock::LockWord;
use crate::global::policy::AbortClass;
use lutra_stm::{Abort, TVar, Transactable, Transaction};

/// How the section's accesses reach memory.
enum Access<'a> {
    /// Through a software transaction (speculative or irrevocable).
    Stm(Transaction<'a>),
    /// Directly, inside a hardware transaction.
    Hardware,
}

/// A running transaction of the elided global lock, as a step sees it.
///
/// Every access returns `Err(Abort)` once the attempt is doomed: return it with `?`
/// and the lock re-runs the steps since the last commit.
pub struct Section<'a> {
    access: Access<'a>,
    lock: &'a LockWord,
    speculation: &'a dyn Speculation,
    site: u32,
    steps: u32,
    locked: bool,
    flag: Option<AbortClass>,
}

impl<'a> Section<'a> {
    /// A section running in the software transaction `tx` (under the lock if `locked`).
    pub(crate) fn stm(
        tx: Transaction<'a>,
        lock: &'a LockWord,
        speculation: &'a dyn Speculation,
        site: u32,
        locked: bool,
    ) -> Self {
        Self {
            access: Access::Stm(tx),
            lock,
            speculation,
            site,
            steps: 0,
            locked,
            flag: None,
        }
    }

    /// A section running inside a hardware transaction.
    pub(crate) fn hardware(
        lock: &'a LockWord,
        speculation: &'a dyn Speculation,
        site: u32,
    ) -> Self {
        Self {
            access: Access::Hardware,
            lock,
            speculation,
            site,
            steps: 0,
            locked: false,
            flag: None,
        }
    }

    /// Reads `var`.
    ///
    /// # Errors
    /// The abort that dooms the attempt (a conflict, the lock being taken).
    #[inline]
    pub fn read<T: Transactable>(&mut self, var: &TVar<T>) -> Result<T, Abort> {
        match &mut self.access {
            Access::Stm(tx) => tx.read(var),
            Access::Hardware => Ok(rtm::read_direct(var)),
        }
    }

    /// Writes `value` to `var`.
    ///
    /// # Errors
    /// As [`Section::read`]. Inside a hardware transaction a boxed value cannot be
    /// written (the box would have to be retired): the transaction aborts as
    /// persistent and runs again under the lock.
    #[inline]
    pub fn write<T: Transactable>(&mut self, var: &TVar<T>, value: T) -> Result<(), Abort> {
        match &mut self.access {
            Access::Stm(tx) => tx.write(var, value),
            Access::Hardware if T::BOXED => rtm::abort(AbortClass::Persistent),
            Access::Hardware => {
                rtm::write_direct(var, value);
                Ok(())
            }
        }
    }

    /// Replaces the value of `var` with `change(old)`.
    ///
    /// # Errors
    /// As [`Section::write`].
    #[inline]
    pub fn modify<T: Transactable>(
        &mut self,
        var: &TVar<T>,
        change: impl FnOnce(T) -> T,
    ) -> Result<(), Abort> {
        let old = self.read(var)?;
        self.write(var, change(old))
    }

    /// Makes sure the rest of this transaction runs under the lock: for work that
    /// cannot be undone (I/O) or must not run twice. Under the lock it returns `Ok`;
    /// in a speculative transaction it aborts it as persistent, and the transaction
    /// runs again from its last commit, under the lock (the paper's restricted
    /// instructions).
    ///
    /// # Errors
    /// The abort, when the transaction is speculative: return it with `?`.
    pub fn require_lock(&mut self) -> Result<(), Abort> {
        if self.locked {
            Ok(())
        } else {
            Err(self.doom(AbortClass::Persistent))
        }
    }

    /// Whether this transaction runs under the lock (a fallback, the single-thread
    /// shortcut, or elision turned off).
    pub fn is_locked(&self) -> bool {
        self.locked
    }

    /// The yield-point site this transaction began at.
    pub fn site(&self) -> u32 {
        self.site
    }

    /// Yield points this attempt has passed (steps completed in it).
    pub fn steps(&self) -> u32 {
        self.steps
    }

    /// A yield point inside the transaction (not its last one): counts the step and,
    /// in a speculative transaction, aborts it if the lock was taken meanwhile or the
    /// backend injects an abort here.
    pub(crate) fn yield_point(&mut self) -> Result<(), Abort> {
        self.steps += 1;
        if self.locked {
            return Ok(());
        }
        if let Access::Hardware = self.access {
            // The hardware aborts the transaction when the lock is taken.
            return Ok(());
        }
        if self.lock.is_held() {
            return Err(self.doom(AbortClass::LockHeld));
        }
        match self.speculation.abort_at_yield_point(self.site, self.steps) {
            Some(class) => Err(self.doom(class)),
            None => Ok(()),
        }
    }

    /// Counts the step that ends the transaction (its last yield point).
    pub(crate) fn last_step(&mut self) {
        self.steps += 1;
    }

    /// Dooms the attempt, recording `class` as its class.
    pub(crate) fn doom(&mut self, class: AbortClass) -> Abort {
        match &mut self.access {
            Access::Stm(tx) => {
                self.flag.get_or_insert(class);
                match tx.abort::<()>() {
                    Err(abort) => abort,
                    Ok(()) => unreachable!("Transaction::abort always fails"),
                }
            }
            Access::Hardware => rtm::abort(class),
        }
    }

    /// The class recorded by [`Section::doom`], if any.
    pub(crate) fn flag(&self) -> Option<AbortClass> {
        self.flag
    }
}
