//! Ownership records: the table of versioned locks that guards every transactional word.
//!
//! Every address maps to one record (`(addr / word size) mod table size`); many
//! addresses share a record, which can only cause false conflicts, never missed ones.
//!
//! # Lock word
//!
//! | bit 63 | bits 0..63 | meaning |
//! |--------|------------|---------|
//! | 0 | version | unlocked; the last commit that wrote a word mapped here had this timestamp |
//! | 1 | owner slot | locked by the transaction descriptor in registry slot `owner` |
//!
//! An unlocked word is its version, and a locked one is larger than any version (the
//! clock never reaches 2^63), so one unsigned comparison with a snapshot tells the
//! read path's straight case: unlocked and no newer than the snapshot
//! ([`LockWord::readable_at`]).
//!
//! # Invariants
//! - A version only grows while the record is unlocked, except that an aborting owner
//!   restores the exact version it found when it locked (no commit happened).
//! - Words mapped to a locked record are written only by the owner, and only after it
//!   has passed the point of no return of its commit.
//! - A reader that sees the same unlocked word before and after loading a value has
//!   loaded the value committed at that version (the seqlock read protocol; see
//!   `descriptor.rs`).

use crate::global::sync::Record;

/// The decoded content of an ownership record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockWord {
    Unlocked { version: u64 },
    Locked { owner: usize },
}

/// The lock bit of a record's word.
const LOCKED: usize = 1 << (usize::BITS - 1);

impl LockWord {
    pub(crate) fn decode(word: usize) -> Self {
        if word & LOCKED == 0 {
            Self::Unlocked {
                version: word as u64,
            }
        } else {
            Self::Locked {
                owner: word & !LOCKED,
            }
        }
    }

    pub(crate) fn unlocked(version: u64) -> usize {
        debug_assert!((version as usize) & LOCKED == 0);
        version as usize
    }

    pub(crate) fn locked(owner: usize) -> usize {
        owner | LOCKED
    }

    /// Whether `word` is unlocked at a version no newer than `snapshot`.
    #[inline(always)]
    pub(crate) fn readable_at(word: usize, snapshot: u64) -> bool {
        word as u64 <= snapshot
    }
}

/// The table of ownership records of one engine instance.
pub(crate) struct OrecTable {
    records: Box<[Record]>,
    mask: usize,
}

impl OrecTable {
    /// A table of `2^bits` records, all unlocked at version 0.
    pub(crate) fn new(bits: u32) -> Self {
        let size = 1usize << bits;
        let records = (0..size).map(|_| Record::new(0)).collect();
        Self {
            records,
            mask: size - 1,
        }
    }

    /// The index of the record that guards `addr`.
    #[inline]
    pub(crate) fn index_of(&self, addr: usize) -> usize {
        (addr / std::mem::size_of::<usize>()) & self.mask
    }

    /// The record at `index` (an index from [`OrecTable::index_of`]; any index is
    /// taken modulo the table's size).
    #[inline]
    pub(crate) fn record(&self, index: usize) -> &Record {
        debug_assert!(index <= self.mask);
        // SAFETY: masked with `mask = records.len() - 1` (a power of two minus one),
        // the index is in bounds.
        unsafe { self.records.get_unchecked(index & self.mask) }
    }

    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    /// The table as a descriptor keeps it at hand (see [`OrecView`]).
    pub(crate) fn view(&self) -> OrecView {
        OrecView {
            records: self.records.as_ptr(),
            mask: self.mask,
        }
    }
}

/// The table's address and mask, copied into a descriptor so that its inlined read
/// path finds a record with no load of the engine's address: valid while the engine
/// lives, which the descriptor that keeps it ensures (it holds the engine).
#[derive(Clone, Copy)]
pub(crate) struct OrecView {
    records: *const Record,
    mask: usize,
}

impl OrecView {
    /// The index of the record that guards the word with index `word` (its address
    /// divided by the word's size).
    #[inline(always)]
    pub(crate) fn index_of_word(&self, word: usize) -> usize {
        word & self.mask
    }

    /// As [`OrecTable::record`].
    ///
    /// # Safety
    /// The table must be alive for as long as the returned reference is used.
    #[inline(always)]
    pub(crate) unsafe fn record<'a>(&self, index: usize) -> &'a Record {
        // SAFETY: masked with the table's `mask` (its length minus one), the index is
        // in bounds; the caller keeps the table alive.
        unsafe { &*self.records.add(index & self.mask) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_words_round_trip() {
        assert_eq!(
            LockWord::decode(LockWord::unlocked(42)),
            LockWord::Unlocked { version: 42 }
        );
        assert_eq!(
            LockWord::decode(LockWord::locked(7)),
            LockWord::Locked { owner: 7 }
        );
        assert_ne!(LockWord::locked(0), LockWord::unlocked(0));
    }

    #[test]
    fn only_unlocked_words_no_newer_than_the_snapshot_are_readable() {
        assert!(LockWord::readable_at(LockWord::unlocked(5), 5));
        assert!(LockWord::readable_at(LockWord::unlocked(0), 5));
        assert!(!LockWord::readable_at(LockWord::unlocked(6), 5));
        assert!(!LockWord::readable_at(LockWord::locked(0), 5));
        assert!(!LockWord::readable_at(LockWord::locked(3), u64::MAX >> 1));
    }

    #[test]
    fn neighbouring_words_map_to_neighbouring_records() {
        let table = OrecTable::new(4);
        let base = 0x1000usize;
        assert_eq!(table.index_of(base) + 1, table.index_of(base + 8));
        assert_eq!(table.index_of(base), table.index_of(base + 16 * 8));
    }
}
