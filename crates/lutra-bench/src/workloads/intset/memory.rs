//! How a structure's algorithm reaches its words: through a transaction, or directly.
//!
//! Every structure is written once, generic over [`Access`]: the transactional sets run
//! it with [`Transaction`] on [`TVar<u64>`] words, the sequential baselines with
//! [`Direct`] on [`PlainWord`]s. The baselines thus execute the very same algorithm
//! without instrumentation, which is what makes "single-thread overhead against
//! sequential" a measurement of the STM and nothing else (STAMP's `TM_SHARED_READ`
//! compiling to a plain load in its sequential build plays the same role).
//!
//! # Invariants
//! - A structure holds only words of one [`Word`] type and is only ever accessed
//!   through the matching [`Access`].
//! - [`Direct`] performs relaxed atomic loads and stores (plain moves on x86-64): it is
//!   free of data races but provides no atomicity across words, so a set accessed
//!   through it needs exclusive access for updates (`&mut`, a lock).

use lutra_stm::{Abort, TVar, Transaction};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};

/// A 64-bit cell a structure is built of.
pub trait Word: Default + Send + Sync + 'static {
    /// A cell holding `value`.
    fn new(value: u64) -> Self;
}

impl Word for TVar<u64> {
    fn new(value: u64) -> Self {
        TVar::new(value)
    }
}

/// An uninstrumented word, for the sequential and lock-based baselines.
#[derive(Debug, Default)]
pub struct PlainWord(AtomicU64);

impl Word for PlainWord {
    fn new(value: u64) -> Self {
        Self(AtomicU64::new(value))
    }
}

/// Reads and writes of [`Word`]s: a transaction, or direct memory access.
pub trait Access {
    /// The words this access reaches.
    type Word: Word;
    /// Why an access can fail: [`Abort`] for transactions, [`Infallible`] otherwise.
    type Error;

    /// Reads `word`.
    ///
    /// # Errors
    /// The abort that dooms a transactional attempt; return it with `?`.
    fn load(&mut self, word: &Self::Word) -> Result<u64, Self::Error>;

    /// Writes `value` to `word`.
    ///
    /// # Errors
    /// As [`Access::load`].
    fn store(&mut self, word: &Self::Word, value: u64) -> Result<(), Self::Error>;
}

impl Access for Transaction<'_> {
    type Word = TVar<u64>;
    type Error = Abort;

    #[inline]
    fn load(&mut self, word: &TVar<u64>) -> Result<u64, Abort> {
        self.read(word)
    }

    #[inline]
    fn store(&mut self, word: &TVar<u64>, value: u64) -> Result<(), Abort> {
        self.write(word, value)
    }
}

/// Direct, uninstrumented access to [`PlainWord`]s (see the module invariants).
#[derive(Clone, Copy, Debug, Default)]
pub struct Direct;

impl Access for Direct {
    type Word = PlainWord;
    type Error = Infallible;

    #[inline]
    fn load(&mut self, word: &PlainWord) -> Result<u64, Infallible> {
        Ok(word.0.load(Ordering::Relaxed))
    }

    #[inline]
    fn store(&mut self, word: &PlainWord, value: u64) -> Result<(), Infallible> {
        word.0.store(value, Ordering::Relaxed);
        Ok(())
    }
}
