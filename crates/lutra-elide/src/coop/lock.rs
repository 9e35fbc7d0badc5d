//! The cooperative lock's two words and how a transaction attempt enters it.
//!
//! # Words
//! | word | accessed | value | meaning |
//! |------|----------|-------|---------|
//! | `owner` | plainly (atomics), never transactionally | 0 | no exclusive section holds the lock at its door |
//! | | | 1 | the outermost exclusive section of this lock runs (it holds the engine's commit gate) |
//! | `generation` | transactionally only | n | bumped by every exclusive section; optimistic holders keep it in their read set |
//!
//! `owner` is the paper's polled lock byte; `generation` is the lock variable a
//! transactional holder keeps in its read set so that an exclusive holder's write
//! restarts it (seed 003, Section 4).
//!
//! # Invariants
//! - Only an irrevocable attempt sets `owner` (and the engine has one at a time), so
//!   `owner` is 1 only while its setter's section runs; the setter clears it when the
//!   section ends, however it ends ([`Driver`](super::Driver)'s `Drop`).
//! - An optimistic attempt reads `generation` only once `owner` is 0: a waiter never
//!   holds the lock word in its read set while the lock is held, so the release does
//!   not abort it.
//! - Every exclusive entry writes `generation` inside its irrevocable attempt: an
//!   optimistic updater that entered before cannot commit while it runs (the commit
//!   gate) and fails validation after it.
//!
//! # Protocol: entering (one attempt)
//! 1. Irrevocable attempt (exclusive mode): read `generation`, write it + 1.
//! 2. Otherwise (optimistic mode): wait, without transactional reads, until `owner`
//!    is 0 (aborting if the attempt is killed meanwhile), then read `generation`.

use lutra_stm::{Abort, Transaction};
use std::sync::atomic::{AtomicUsize, Ordering};

/// How a critical section runs: the paper's two ways into a cxspinlock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// As a transaction, beside other optimistic holders (`cx_optimistic`).
    Optimistic,
    /// Alone: an irrevocable transaction holding the lock (`cx_exclusive`); it runs
    /// once and may do I/O.
    Exclusive,
}

impl Mode {
    /// The mode a section runs in inside `tx`: exclusive exactly when the attempt is
    /// irrevocable.
    pub fn of(tx: &Transaction<'_>) -> Self {
        if tx.is_irrevocable() {
            Self::Exclusive
        } else {
            Self::Optimistic
        }
    }
}

/// A cooperative transactional lock (TxLinux's cxspinlock, seed 003 Section 4): one
/// critical section may run optimistically as a transaction, many at once, or
/// exclusively, and falls back from the first to the second when it needs to (I/O).
///
/// Use it through [`CoopLock::optimistic`], [`CoopLock::exclusive`] and, inside a
/// transaction, [`CoopLock::nested`]; see the [module](super) for the paper's table.
/// The layout is the C API's `cx_lock_t` (two words, zero when free), and a lock
/// must be used with one engine only (its `generation` word is a transactional
/// location, as a [`TVar`](lutra_stm::TVar) is).
///
/// ```
/// use lutra_elide::coop::CoopLock;
/// use lutra_stm::{Stm, TVar};
/// let (stm, lock, hits) = (Stm::default(), CoopLock::new(), TVar::new(0u32));
/// let seen = lock.optimistic(&stm, |tx| {
///     tx.modify(&hits, |n| n + 1)?;
///     tx.read(&hits)
/// });
/// assert_eq!(seen, 1);
/// ```
#[repr(C)]
#[derive(Debug, Default)]
pub struct CoopLock {
    owner: AtomicUsize,
    generation: AtomicUsize,
}

impl CoopLock {
    /// A free lock.
    pub const fn new() -> Self {
        Self {
            owner: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        }
    }

    /// Whether an exclusive section holds the lock now (a snapshot: it may change at
    /// once). Any time.
    pub fn is_held(&self) -> bool {
        self.owner.load(Ordering::Acquire) != 0
    }

    /// Exclusive sections of this lock so far (a committed count, read outside
    /// transactions; a hint while sections run).
    pub fn generation(&self) -> usize {
        self.generation.load(Ordering::Acquire)
    }

    /// Enters the lock inside the running attempt of `tx`, in the attempt's mode (see
    /// the module protocol); returns that mode. Nested entries flatten: the lock
    /// joins the enclosing transaction and stays in it until the outermost commit.
    ///
    /// # Errors
    /// The abort that dooms the attempt (it was killed while waiting for the lock, or
    /// a conflict on the lock word).
    pub fn enter(&self, tx: &mut Transaction<'_>) -> Result<Mode, Abort> {
        let mode = Mode::of(tx);
        let generation = self.generation.as_ptr();
        match mode {
            Mode::Exclusive => {
                // SAFETY: `generation` is an aligned word that lives as long as `self`,
                // which the caller borrows across the whole attempt; it is only ever
                // accessed transactionally, through one engine (the type's contract).
                unsafe {
                    let seen = tx.load_word(generation)?;
                    tx.store_word(generation, seen.wrapping_add(1), usize::MAX)?;
                }
            }
            Mode::Optimistic => {
                // ORDERING: pairs with the Release store that clears `owner` after the
                // exclusive section committed; the read below then sees its version.
                tx.wait_until(|| self.owner.load(Ordering::Acquire) == 0)?;
                // SAFETY: as above.
                unsafe { tx.load_word(generation)? };
            }
        }
        Ok(mode)
    }

    /// Sets `owner`: an outermost exclusive section is running. Called only from an
    /// irrevocable attempt (see the module invariants).
    pub(crate) fn close_door(&self) {
        self.owner.store(1, Ordering::SeqCst);
    }

    /// Clears `owner`, once the section that set it is over (committed or abandoned).
    pub(crate) fn open_door(&self) {
        // ORDERING: pairs with the Acquire poll of optimistic entrants.
        self.owner.store(0, Ordering::Release);
    }
}
