//! Ownership records: the table of versioned locks that guards every transactional word.
//!
//! Every address maps to one record (`(addr / word size / words per record) mod table
//! size`); many addresses share a record, which can only cause false conflicts, never
//! missed ones.
//!
//! # Two mappings, chosen by the access path
//! How many neighbouring words a record guards is a compile-time property of the
//! path that reaches the word, a [`RecordMapping`] type that the barriers are
//! monomorphised over:
//! - [`PerWord`], one record per word: Rust [`TVar`](crate::TVar)s, Lua shared tables
//!   and every other Rust caller. Two `TVar`s side by side on a stack, or two fields of
//!   one table, never conflict with each other.
//! - [`PerGranule`], one record per aligned granule of four words (32 bytes on 64-bit
//!   targets), tinySTM's default (`LOCK_SHIFT_EXTRA=2`): the C ABI (`stm.h`) and
//!   GCC's libitm ABI, where the documented semantics are tinySTM's and neighbouring
//!   words of a granule conflict. A node of a few words takes one or two records, so a
//!   commit locks fewer, and a walk through nodes touches a quarter as many of the
//!   table's lines: on the sorted list with 50% updates, one worker, 45.6 first-level
//!   read misses per transaction with a record per word against 7.6
//!   (`docs/performance.md`).
//!
//! Both mappings index the one table of an engine. A transaction's read-set entries
//! and write-set entries keep the record they were mapped to (a write entry its
//! record number, `WriteEntry::record`), so validation and commit never map an
//! address again, and never with the other mapping.
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
//! - Every access to one word, through any barrier (read, write, free, the C ABI's
//!   ranges and sub-word accesses), maps it with the same [`RecordMapping`]: a word is
//!   reached through one path only (a `TVar`'s word only through its `TVar`, a C
//!   object's only through the C ABI), and each path fixes its mapping at compile
//!   time. So every reader and every writer of a word meet at one record, and mixing
//!   the two mappings in one table can only add false conflicts (a granule's record
//!   may also be some word's record under [`PerWord`]), never hide a true one.

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

/// How many neighbouring words one ownership record guards, fixed by the access path
/// at compile time (see the module header). Implemented by [`PerWord`] and
/// [`PerGranule`] only.
pub trait RecordMapping: sealed::Sealed {
    /// Words per record, as a shift: a record guards the `2^WORD_SHIFT` words of an
    /// aligned granule.
    const WORD_SHIFT: u32;

    /// The number of the record that guards the word with index `word` (its address
    /// divided by the word's size), before it is reduced to the table's size.
    #[inline(always)]
    fn record_of_word(word: usize) -> usize {
        word >> Self::WORD_SHIFT
    }

    /// [`RecordMapping::record_of_word`] of the word at `addr`.
    #[inline(always)]
    fn record_of(addr: usize) -> usize {
        Self::record_of_word(addr / std::mem::size_of::<usize>())
    }
}

/// One record per word: Rust `TVar`s, Lua shared tables, every Rust caller.
#[derive(Clone, Copy, Debug, Default)]
pub struct PerWord;

/// One record per aligned granule of four words (32 bytes on 64-bit targets), as
/// tinySTM: the C ABI and the libitm ABI. Neighbouring words of a granule conflict.
#[derive(Clone, Copy, Debug, Default)]
pub struct PerGranule;

impl RecordMapping for PerWord {
    const WORD_SHIFT: u32 = 0;
}

impl RecordMapping for PerGranule {
    const WORD_SHIFT: u32 = 2;
}

mod sealed {
    /// Keeps [`RecordMapping`](super::RecordMapping) to the engine's two mappings.
    pub trait Sealed {}
    impl Sealed for super::PerWord {}
    impl Sealed for super::PerGranule {}
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

    /// The index of the record that guards `addr` under the mapping `M`.
    #[inline]
    pub(crate) fn index_of<M: RecordMapping>(&self, addr: usize) -> usize {
        self.index_of_record(M::record_of(addr))
    }

    /// The index of the record numbered `record` ([`RecordMapping::record_of`]).
    #[inline]
    pub(crate) fn index_of_record(&self, record: usize) -> usize {
        record & self.mask
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
    /// divided by the word's size) under the mapping `M`, as [`OrecTable::index_of`].
    #[inline(always)]
    pub(crate) fn index_of_word<M: RecordMapping>(&self, word: usize) -> usize {
        M::record_of_word(word) & self.mask
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
    fn per_word_neighbouring_words_map_to_neighbouring_records() {
        let table = OrecTable::new(4);
        let base = 0x1000usize;
        let at = |addr| table.index_of::<PerWord>(addr);
        assert_eq!(at(base) + 1, at(base + 8));
        assert_eq!(at(base), at(base + 16 * 8));
    }

    #[test]
    fn per_granule_the_words_of_a_granule_share_a_record_and_neighbours_do_not() {
        let table = OrecTable::new(4);
        let base = 0x1000usize;
        let at = |addr| table.index_of::<PerGranule>(addr);
        for word in 1..4 {
            assert_eq!(at(base), at(base + 8 * word));
        }
        assert_eq!(at(base) + 1, at(base + 32));
        assert_eq!(at(base), at(base + 16 * 32));
        let view = table.view();
        for addr in [base, base + 8, base + 32 + 24, base + 17 * 32] {
            assert_eq!(view.index_of_word::<PerGranule>(addr / 8), at(addr));
            assert_eq!(
                view.index_of_word::<PerWord>(addr / 8),
                table.index_of::<PerWord>(addr)
            );
        }
    }
}
