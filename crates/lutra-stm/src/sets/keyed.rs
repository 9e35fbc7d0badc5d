//! The entries of the sets and the keyed vector that holds them: found by key
//! linearly while small (up to `LINEAR_MAX` entries) and through an open-addressing
//! index ([`Index`]) once they outgrow that. Built for instruction count: one
//! multiply to hash, linear probing in a power-of-two table kept at most half full,
//! so a lookup or an insert is a handful of instructions and every rehash is out of
//! line. Clearing costs at most a constant times the vector's size, never its past
//! capacity (an index is emptied at once, by a new generation: see [`Index`]), and
//! tables that grew past a bound are given back when cleared.
//!
//! # Invariants
//! - While indexed, the index maps each key to its entry and holds nothing else.

use crate::global::epoch::Release;
use crate::global::orec::RecordMapping;
use crate::global::sync::Ordering;
use crate::global::sync::data::AtomicUsize;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The multiplier of Fibonacci hashing: 2^64 divided by the golden ratio, odd.
pub(crate) const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// Hashes word addresses and record indices: one multiply, high bits folded down.
#[derive(Default)]
pub(crate) struct WordHasher(u64);

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(self.0 ^ u64::from(byte));
        }
    }

    fn write_u64(&mut self, value: u64) {
        let mixed = (value ^ self.0).wrapping_mul(GOLDEN);
        self.0 = mixed ^ (mixed >> 29);
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }
}

pub(crate) type WordMap<V> = HashMap<usize, V, BuildHasherDefault<WordHasher>>;

/// A record read, with the version seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReadEntry {
    pub(crate) orec: usize,
    pub(crate) version: u64,
}

/// A buffered write.
#[derive(Clone, Copy)]
pub(crate) struct WriteEntry {
    pub(crate) addr: usize,
    pub(crate) value: usize,
    pub(crate) mask: usize,
    /// How to release the value this write replaces, once committed (boxed `TVar`s).
    pub(crate) retire_old: Option<Release>,
    /// The number of the record that guards `addr`, under the mapping of the path
    /// that wrote it (`RecordMapping::record_of`; not yet reduced to the table's
    /// size): the commit locks it without mapping the address again.
    pub(crate) record: usize,
}

impl WriteEntry {
    /// The first buffered write of the bits of `value` selected by `mask` to `addr`,
    /// guarded by its record under the mapping `M`.
    #[inline]
    pub(crate) fn new<M: RecordMapping>(
        addr: usize,
        value: usize,
        mask: usize,
        retire_old: Option<Release>,
    ) -> Self {
        Self {
            addr,
            value: value & mask,
            mask,
            retire_old,
            record: M::record_of(addr),
        }
    }

    /// Merges a later write of the bits of `value` selected by `mask`.
    #[inline]
    pub(crate) fn merge(&mut self, value: usize, mask: usize) {
        self.value = (self.value & !mask) | (value & mask);
        self.mask |= mask;
    }

    /// Whether the write changes any byte: an entry of mask 0 (a freed block's word,
    /// written unchanged so that its record is locked and its version moves) has
    /// nothing to store, and its write-back leaves the word's line alone.
    #[inline(always)]
    pub(crate) fn writes_bytes(&self) -> bool {
        self.mask != 0
    }

    /// The word to store, given the word currently in memory.
    #[inline]
    pub(crate) fn merged_with(&self, memory: usize) -> usize {
        (memory & !self.mask) | (self.value & self.mask)
    }

    /// Stores the write into `word`, which this attempt holds: the buffered value
    /// alone when it covers the whole word (the common case, with no load of the
    /// word), else merged with the word in memory.
    #[inline(always)]
    pub(crate) fn store_into(&self, word: &AtomicUsize) {
        let value = if self.mask == usize::MAX {
            self.value
        } else {
            self.merged_with(word.load(Ordering::Relaxed))
        };
        word.store(value, Ordering::Relaxed);
    }
}

/// Sets up to this size are searched linearly; larger ones through an [`Index`], built
/// when the set first outgrows it.
pub(crate) const LINEAR_MAX: usize = 8;

/// Vectors that grew past this capacity are given back when cleared, so one huge
/// transaction does not keep its memory for the life of the thread.
pub(crate) const KEPT_CAPACITY: usize = 1 << 12;

/// Index tables with more slots than this are given back when cleared (a table this
/// size serves a set of `KEPT_CAPACITY` entries).
pub(crate) const KEPT_SLOTS: usize = 2 * KEPT_CAPACITY;

/// The fewest slots an index table has (room for `2 * LINEAR_MAX` entries).
pub(crate) const MIN_SLOTS: usize = 4 * LINEAR_MAX;

/// The key a vacant slot is made with. No key is ever this value: word addresses are
/// aligned and record indices are below the size of the record table. (What makes a
/// slot vacant is its generation, [`Slot::generation`]; a slot emptied by a new generation
/// keeps its old key.)
pub(crate) const VACANT: usize = usize::MAX;

/// An entry of a set, found by a one-word key.
pub(crate) trait Keyed {
    fn key(&self) -> usize;
}

impl Keyed for WriteEntry {
    #[inline]
    fn key(&self) -> usize {
        self.addr
    }
}

impl Keyed for ReadEntry {
    #[inline]
    fn key(&self) -> usize {
        self.orec
    }
}

/// One slot of an [`Index`]: a key, the position of its entry, and the generation of
/// the index it was filled in (the slot is occupied only while that is the index's
/// generation). Sixteen bytes, as a key and a position alone.
#[derive(Clone, Copy)]
pub(crate) struct Slot {
    pub(crate) key: usize,
    pub(crate) at: u32,
    pub(crate) generation: u32,
}

impl Slot {
    /// A slot vacant in every generation (no index's generation is 0).
    const EMPTY: Self = Self {
        key: VACANT,
        at: 0,
        generation: 0,
    };
}

/// The number of slots an index needs to hold `entries` keys at most half full.
pub(crate) fn slots_for(entries: usize) -> usize {
    entries.saturating_mul(2).next_power_of_two().max(MIN_SLOTS)
}

/// An open-addressing hash index from keys to entry positions: linear probing from a
/// home slot given by one multiply ([`Index::home`]), in a power-of-two table.
///
/// A slot is occupied when its generation is the index's, `generation`, and vacant otherwise;
/// so [`Index::clear`] empties the whole table by moving to the next generation, one
/// store, whatever its size (only once in 2^32 clears, when the generation wraps, are
/// the slots rewritten).
///
/// # Invariants
/// - `generation` is never 0, so [`Slot::EMPTY`] is vacant in every generation.
/// - `slots` is empty or has a power-of-two length of at least `MIN_SLOTS`, and then
///   `shift == 64 - log2(slots.len())`, so a key's home slot is in the table.
/// - At most half the slots are occupied, so every probe ends at a vacant slot.
/// - The table is the one that inserting its keys, in the order of their positions,
///   into an empty table of its size produces (rehashing re-inserts in that order, and
///   keys are only removed newest first). Hence no key's probe crosses the slot of a
///   newer key, and emptying the slot of the newest key removes it exactly.
pub(crate) struct Index {
    pub(crate) slots: Box<[Slot]>,
    pub(crate) shift: u32,
    pub(crate) generation: u32,
}

impl Default for Index {
    fn default() -> Self {
        Self {
            slots: Box::default(),
            shift: u64::BITS,
            generation: 1,
        }
    }
}

impl Index {
    /// An empty table of `slots` slots (a power of two, at least `MIN_SLOTS`).
    pub(crate) fn with_slots(slots: usize) -> Self {
        debug_assert!(slots.is_power_of_two() && slots >= MIN_SLOTS);
        Self {
            slots: vec![Slot::EMPTY; slots].into_boxed_slice(),
            shift: u64::BITS - slots.trailing_zeros(),
            generation: 1,
        }
    }

    /// Whether `slot` is occupied (filled in this generation).
    #[inline(always)]
    pub(crate) fn holds(&self, slot: Slot) -> bool {
        slot.generation == self.generation
    }

    /// Whether this table is `built` slot for slot (the same slots occupied, by the
    /// same keys): the tests' check that a table is the one that inserting its keys in
    /// position order builds.
    #[cfg(test)]
    pub(crate) fn matches(&self, built: &Index) -> bool {
        built
            .slots
            .iter()
            .zip(self.slots.iter())
            .all(|(a, b)| built.holds(*a) == self.holds(*b) && (!self.holds(*b) || a.key == b.key))
    }

    /// Empties the table: every slot becomes vacant, by a new generation.
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.wrap();
        }
    }

    /// The generation wrapped: slots of the generation now starting again could look
    /// occupied, so every slot is rewritten vacant, and the generation restarts at 1.
    #[cold]
    fn wrap(&mut self) {
        self.slots.fill(Slot::EMPTY);
        self.generation = 1;
    }

    /// How many keys the table may hold.
    #[inline]
    pub(crate) fn limit(&self) -> usize {
        self.slots.len() / 2
    }

    /// The slot where `key`'s probe starts: the top bits of `key * GOLDEN`, the key
    /// rotated first so that the zero bits of aligned addresses do not spoil the
    /// golden ratio's spread (consecutive words land far apart, evenly).
    #[inline]
    pub(crate) fn home(&self, key: usize) -> usize {
        ((key as u64).rotate_right(3).wrapping_mul(GOLDEN) >> self.shift) as usize
    }

    /// The slot at `at`, without a bounds check.
    ///
    /// # Safety
    /// `at < self.slots.len()`, as for a home slot (type invariant), a masked index, or
    /// a slot [`Index::find`] returned (the table not replaced since).
    #[inline]
    pub(crate) unsafe fn slot(&self, at: usize) -> Slot {
        debug_assert!(at < self.slots.len());
        // SAFETY: the caller guarantees `at` is inside the table.
        unsafe { *self.slots.get_unchecked(at) }
    }

    /// Finds `key`: `Ok` with the position of its entry, or else `Err` with the vacant
    /// slot where its probe ended (where it would be put). The table must not be empty.
    #[inline]
    pub(crate) fn find(&self, key: usize) -> Result<usize, usize> {
        debug_assert!(!self.slots.is_empty() && key != VACANT);
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        loop {
            // SAFETY: `at` is the home slot or masked (and the table not empty).
            let slot = unsafe { self.slot(at) };
            if !self.holds(slot) {
                return Err(at);
            }
            if slot.key == key {
                return Ok(slot.at as usize);
            }
            at = (at + 1) & mask;
        }
    }

    /// The position of `key`'s entry, if the table holds it.
    #[inline]
    pub(crate) fn position(&self, key: usize) -> Option<usize> {
        self.find(key).ok()
    }

    /// Puts `key`, whose entry is at `at`, in the vacant slot `slot` where its probe
    /// ended (its home slot, or the `Err` of [`Index::find`], the table unchanged
    /// since).
    ///
    /// # Safety
    /// `slot < self.slots.len()`, as for [`Index::slot`].
    #[inline]
    pub(crate) unsafe fn fill(&mut self, slot: usize, key: usize, at: usize) {
        debug_assert!(!self.holds(self.slots[slot]) && at <= u32::MAX as usize);
        let generation = self.generation;
        // SAFETY: the caller guarantees `slot` is inside the table.
        *unsafe { self.slots.get_unchecked_mut(slot) } = Slot {
            key,
            at: at as u32,
            generation,
        };
    }

    /// Puts `key`, which the table does not hold, with its entry's position `at`.
    #[inline]
    pub(crate) fn insert(&mut self, key: usize, at: usize) {
        match self.find(key) {
            Ok(_) => debug_assert!(false, "key {key:#x} indexed twice"),
            // SAFETY: `find` returned the slot, in this very table.
            Err(slot) => unsafe { self.fill(slot, key, at) },
        }
    }

    /// Removes `key`, which must be the newest key in the table (see the invariants).
    pub(crate) fn remove(&mut self, key: usize) {
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        while self.slots[at].key != key || !self.holds(self.slots[at]) {
            debug_assert!(self.holds(self.slots[at]), "removing a missing key");
            at = (at + 1) & mask;
        }
        self.slots[at] = Slot::EMPTY;
    }
}

/// Appends `item` to `items` without the growth path.
///
/// # Safety
/// `items.len() < items.capacity()`.
#[inline(always)]
pub(crate) unsafe fn push_unchecked<T>(items: &mut Vec<T>, item: T) {
    let len = items.len();
    debug_assert!(len < items.capacity());
    // SAFETY: the caller guarantees room for one more item; the slot at `len` is
    // uninitialised spare capacity, written once before the length covers it.
    unsafe {
        items.as_mut_ptr().add(len).write(item);
        items.set_len(len + 1);
    }
}

/// A vector of entries with distinct keys, found by key: linearly while small, through
/// an [`Index`] once large. Clearing costs the number of entries.
///
/// # Invariants
/// - While `indexed`, `index` maps the key of every item to its position, and holds
///   nothing else; otherwise every slot of `index` is vacant (a table kept from an
///   earlier attempt, for reuse) and `items.len() <= LINEAR_MAX` unless the set only
///   just outgrew that and is being indexed.
/// - Clearing an indexed vector costs a constant: the items are `Copy` entries, and
///   the index is emptied by a new generation ([`Index::clear`]).
pub(crate) struct KeyedVec<T> {
    pub(crate) items: Vec<T>,
    pub(crate) index: Index,
    pub(crate) indexed: bool,
}

impl<T> Default for KeyedVec<T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            index: Index::default(),
            indexed: false,
        }
    }
}

impl<T: Keyed> KeyedVec<T> {
    #[inline]
    pub(crate) fn position(&self, key: usize) -> Option<usize> {
        if self.indexed {
            return self.index.position(key);
        }
        self.items.iter().rposition(|item| item.key() == key)
    }

    /// Appends `item`, whose key is not in the set yet.
    #[inline]
    pub(crate) fn push(&mut self, item: T) {
        let len = self.items.len();
        if self.indexed {
            if len >= self.index.limit() {
                self.index_for(len + 1);
            }
            self.index.insert(item.key(), len);
        }
        self.items.push(item);
        if !self.indexed && len >= LINEAR_MAX {
            self.index_for(len + 1);
        }
    }

    /// Indexes the set, in a table that can hold `entries` keys: reuses the table
    /// kept if it is large enough, otherwise rehashes into a new one.
    #[cold]
    pub(crate) fn index_for(&mut self, entries: usize) {
        // Positions are kept as `u32` (the engine's set limit is far below).
        assert!(entries <= u32::MAX as usize, "a set too large to index");
        let slots = slots_for(entries);
        if self.indexed && self.index.slots.len() >= slots {
            return;
        }
        if self.indexed || self.index.slots.len() < slots {
            self.index = Index::with_slots(slots);
        }
        // Position order: see `Index`'s invariants.
        for (at, item) in self.items.iter().enumerate() {
            self.index.insert(item.key(), at);
        }
        self.indexed = true;
    }

    /// Drops the items from `len` on, newest first (see `Index`).
    pub(crate) fn truncate(&mut self, len: usize) {
        if self.indexed {
            for item in self.items[len.min(self.items.len())..].iter().rev() {
                self.index.remove(item.key());
            }
        }
        self.items.truncate(len);
    }

    /// Empties the set, in time proportional to its size.
    #[inline]
    pub(crate) fn clear(&mut self) {
        if self.indexed {
            self.clear_indexed();
        } else {
            debug_assert!(self.items.capacity() <= KEPT_CAPACITY);
            self.items.clear();
        }
    }

    /// Empties an indexed set and keeps it indexed, its table emptied by a new
    /// generation ([`Index::clear`]); a vector or table grown past what the sets keep
    /// is given back, and the set is unindexed then.
    #[cold]
    pub(crate) fn clear_staying_indexed(&mut self) {
        debug_assert!(self.indexed);
        if self.items.capacity() > KEPT_CAPACITY || self.index.slots.len() > KEPT_SLOTS {
            self.items = Vec::new();
            self.index = Index::default();
            self.indexed = false;
        } else {
            self.items.clear();
            self.index.clear();
        }
    }

    #[cold]
    pub(crate) fn clear_indexed(&mut self) {
        if self.items.capacity() > KEPT_CAPACITY || self.index.slots.len() > KEPT_SLOTS {
            // Give the memory back: dropping costs nothing per entry.
            self.items = Vec::new();
            self.index = Index::default();
        } else {
            self.items.clear();
            self.index.clear();
        }
        self.indexed = false;
    }
}

#[cfg(test)]
impl<T: Keyed> KeyedVec<T> {
    pub(crate) fn retains_large_table(&self) -> bool {
        self.items.capacity() > KEPT_CAPACITY || self.index.slots.len() > KEPT_SLOTS
    }

    /// Checks the type's invariants and the index's.
    pub(crate) fn check_invariants(&self) {
        let index = &self.index;
        assert_ne!(index.generation, 0);
        let occupied = index.slots.iter().filter(|s| index.holds(**s)).count();
        if !index.slots.is_empty() {
            assert!(index.slots.len().is_power_of_two() && index.slots.len() >= MIN_SLOTS);
            assert_eq!(1 << (u64::BITS - index.shift), index.slots.len());
        }
        if self.indexed {
            assert_eq!(occupied, self.items.len());
            assert!(occupied <= index.limit());
            for (at, item) in self.items.iter().enumerate() {
                assert_eq!(index.find(item.key()), Ok(at));
            }
            // The table is the one inserting the keys in position order builds.
            let mut rebuilt = Index::with_slots(index.slots.len());
            for (at, item) in self.items.iter().enumerate() {
                rebuilt.insert(item.key(), at);
            }
            assert!(index.matches(&rebuilt));
        } else {
            assert_eq!(occupied, 0);
            assert!(self.items.len() <= LINEAR_MAX);
        }
    }
}
