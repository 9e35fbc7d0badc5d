//! The read set, the write set (with `or_else` checkpoints) and the lock set of one
//! transaction attempt.
//!
//! Sets are found by key linearly while small (up to `LINEAR_MAX` entries) and through
//! an open-addressing index ([`Index`]) once they outgrow that; the write set also
//! keeps a one-word filter of the addresses written, so most reads never search it.
//! The index is built for instruction count: one multiply to hash, linear probing in a
//! power-of-two table kept at most half full, so a lookup or an insert is a handful of
//! instructions and every rehash is out of line. Clearing costs at most a constant
//! times the set's size, never its past capacity, and vectors and tables that grew
//! past a bound are given back when cleared: one huge attempt does not slow, nor keep
//! memory for, every later small one.
//!
//! # Invariants
//! - The write set holds at most one entry per address; while indexed, the index maps
//!   each address to its entry and holds nothing else; the filter has the bit of every
//!   address in the set.
//! - An entry's buffered value counts only in the bits of its mask; the other bits come
//!   from memory at commit.
//! - While a checkpoint is open, every change to an entry older than the checkpoint is
//!   preceded by an undo record, so rolling back to the checkpoint restores every entry
//!   as it was when the checkpoint was taken.
//! - [`WriteSet::write`] appends only below the write set's `room`, which the engine
//!   grants with [`WriteSet::allow`] and which never exceeds the memory reserved for it
//!   (see [`WriteSet`]).

use crate::epoch::Release;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The multiplier of Fibonacci hashing: 2^64 divided by the golden ratio, odd.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

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
}

impl WriteEntry {
    /// The first buffered write of the bits of `value` selected by `mask` to `addr`.
    #[inline]
    pub(crate) fn new(addr: usize, value: usize, mask: usize, retire_old: Option<Release>) -> Self {
        Self {
            addr,
            value: value & mask,
            mask,
            retire_old,
        }
    }

    /// Merges a later write of the bits of `value` selected by `mask`.
    #[inline]
    fn merge(&mut self, value: usize, mask: usize) {
        self.value = (self.value & !mask) | (value & mask);
        self.mask |= mask;
    }

    /// The word to store, given the word currently in memory.
    #[inline]
    pub(crate) fn merged_with(&self, memory: usize) -> usize {
        (memory & !self.mask) | (self.value & self.mask)
    }
}

/// Sets up to this size are searched linearly; larger ones through an [`Index`], built
/// when the set first outgrows it.
pub(crate) const LINEAR_MAX: usize = 8;

/// Vectors that grew past this capacity are given back when cleared, so one huge
/// transaction does not keep its memory for the life of the thread.
const KEPT_CAPACITY: usize = 1 << 12;

/// Index tables with more slots than this are given back when cleared (a table this
/// size serves a set of `KEPT_CAPACITY` entries).
const KEPT_SLOTS: usize = 2 * KEPT_CAPACITY;

/// The fewest slots an index table has (room for `2 * LINEAR_MAX` entries).
const MIN_SLOTS: usize = 4 * LINEAR_MAX;

/// The key of a vacant slot. No key is ever this value: word addresses are aligned and
/// record indices are below the size of the record table.
const VACANT: usize = usize::MAX;

/// An entry of a set, found by a one-word key.
trait Keyed {
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

/// One slot of an [`Index`]: a key and the position of its entry.
#[derive(Clone, Copy)]
struct Slot {
    key: usize,
    at: u32,
}

impl Slot {
    const EMPTY: Self = Self { key: VACANT, at: 0 };
}

/// The number of slots an index needs to hold `entries` keys at most half full.
fn slots_for(entries: usize) -> usize {
    entries.saturating_mul(2).next_power_of_two().max(MIN_SLOTS)
}

/// An open-addressing hash index from keys to entry positions: linear probing from a
/// home slot given by one multiply ([`Index::home`]), in a power-of-two table.
///
/// # Invariants
/// - `slots` is empty or has a power-of-two length of at least `MIN_SLOTS`, and then
///   `shift == 64 - log2(slots.len())`, so a key's home slot is in the table.
/// - At most half the slots are occupied, so every probe ends at a vacant slot.
/// - The table is the one that inserting its keys, in the order of their positions,
///   into an empty table of its size produces (rehashing re-inserts in that order, and
///   keys are only removed newest first). Hence no key's probe crosses the slot of a
///   newer key, and emptying the slot of the newest key removes it exactly.
struct Index {
    slots: Box<[Slot]>,
    shift: u32,
}

impl Default for Index {
    fn default() -> Self {
        Self {
            slots: Box::default(),
            shift: u64::BITS,
        }
    }
}

impl Index {
    /// An empty table of `slots` slots (a power of two, at least `MIN_SLOTS`).
    fn with_slots(slots: usize) -> Self {
        debug_assert!(slots.is_power_of_two() && slots >= MIN_SLOTS);
        Self {
            slots: vec![Slot::EMPTY; slots].into_boxed_slice(),
            shift: u64::BITS - slots.trailing_zeros(),
        }
    }

    /// How many keys the table may hold.
    #[inline]
    fn limit(&self) -> usize {
        self.slots.len() / 2
    }

    /// The slot where `key`'s probe starts: the top bits of `key * GOLDEN`, the key
    /// rotated first so that the zero bits of aligned addresses do not spoil the
    /// golden ratio's spread (consecutive words land far apart, evenly).
    #[inline]
    fn home(&self, key: usize) -> usize {
        ((key as u64).rotate_right(3).wrapping_mul(GOLDEN) >> self.shift) as usize
    }

    /// The slot at `at`, without a bounds check.
    ///
    /// # Safety
    /// `at < self.slots.len()`, as for a home slot (type invariant), a masked index, or
    /// a slot [`Index::find`] returned (the table not replaced since).
    #[inline]
    unsafe fn slot(&self, at: usize) -> Slot {
        debug_assert!(at < self.slots.len());
        // SAFETY: the caller guarantees `at` is inside the table.
        unsafe { *self.slots.get_unchecked(at) }
    }

    /// Finds `key`: `Ok` with the position of its entry, or else `Err` with the vacant
    /// slot where its probe ended (where it would be put). The table must not be empty.
    #[inline]
    fn find(&self, key: usize) -> Result<usize, usize> {
        debug_assert!(!self.slots.is_empty() && key != VACANT);
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        loop {
            // SAFETY: `at` is the home slot or masked (and the table not empty).
            let slot = unsafe { self.slot(at) };
            if slot.key == key {
                return Ok(slot.at as usize);
            }
            if slot.key == VACANT {
                return Err(at);
            }
            at = (at + 1) & mask;
        }
    }

    /// The position of `key`'s entry, if the table holds it.
    #[inline]
    fn position(&self, key: usize) -> Option<usize> {
        self.find(key).ok()
    }

    /// Puts `key`, whose entry is at `at`, in the vacant slot `slot` where its probe
    /// ended (its home slot, or the `Err` of [`Index::find`], the table unchanged
    /// since).
    ///
    /// # Safety
    /// `slot < self.slots.len()`, as for [`Index::slot`].
    #[inline]
    unsafe fn fill(&mut self, slot: usize, key: usize, at: usize) {
        debug_assert!(self.slots[slot].key == VACANT && at <= u32::MAX as usize);
        // SAFETY: the caller guarantees `slot` is inside the table.
        *unsafe { self.slots.get_unchecked_mut(slot) } = Slot { key, at: at as u32 };
    }

    /// Puts `key`, which the table does not hold, with its entry's position `at`.
    #[inline]
    fn insert(&mut self, key: usize, at: usize) {
        match self.find(key) {
            Ok(_) => debug_assert!(false, "key {key:#x} indexed twice"),
            // SAFETY: `find` returned the slot, in this very table.
            Err(slot) => unsafe { self.fill(slot, key, at) },
        }
    }

    /// Removes `key`, which must be the newest key in the table (see the invariants).
    fn remove(&mut self, key: usize) {
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        while self.slots[at].key != key {
            debug_assert!(self.slots[at].key != VACANT, "removing a missing key");
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
unsafe fn push_unchecked<T>(items: &mut Vec<T>, item: T) {
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
struct KeyedVec<T> {
    items: Vec<T>,
    index: Index,
    indexed: bool,
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
    fn position(&self, key: usize) -> Option<usize> {
        if self.indexed {
            return self.index.position(key);
        }
        self.items.iter().rposition(|item| item.key() == key)
    }

    /// Appends `item`, whose key is not in the set yet.
    #[inline]
    fn push(&mut self, item: T) {
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
    fn index_for(&mut self, entries: usize) {
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
    fn truncate(&mut self, len: usize) {
        if self.indexed {
            for item in self.items[len.min(self.items.len())..].iter().rev() {
                self.index.remove(item.key());
            }
        }
        self.items.truncate(len);
    }

    /// Empties the set, in time proportional to its size.
    #[inline]
    fn clear(&mut self) {
        if self.indexed {
            self.clear_indexed();
        } else {
            debug_assert!(self.items.capacity() <= KEPT_CAPACITY);
            self.items.clear();
        }
    }

    #[cold]
    fn clear_indexed(&mut self) {
        if self.items.capacity() > KEPT_CAPACITY || self.index.slots.len() > KEPT_SLOTS {
            // Give the memory back: dropping costs nothing per entry.
            self.items = Vec::new();
            self.index = Index::default();
        } else if self.index.slots.len() <= 8 * self.items.len() {
            // Mostly full: wiping the whole table is cheaper than removing each key,
            // and its cost is still within a constant of the set's size.
            self.items.clear();
            self.index.slots.fill(Slot::EMPTY);
        } else {
            self.truncate(0);
        }
        self.indexed = false;
    }
}

#[cfg(test)]
impl<T: Keyed> KeyedVec<T> {
    fn retains_large_table(&self) -> bool {
        self.items.capacity() > KEPT_CAPACITY || self.index.slots.len() > KEPT_SLOTS
    }

    /// Checks the type's invariants and the index's.
    fn check_invariants(&self) {
        let index = &self.index;
        let occupied = index.slots.iter().filter(|s| s.key != VACANT).count();
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
            assert!(
                rebuilt
                    .slots
                    .iter()
                    .zip(index.slots.iter())
                    .all(|(a, b)| a.key == b.key)
            );
        } else {
            assert_eq!(occupied, 0);
            assert!(self.items.len() <= LINEAR_MAX);
        }
    }
}

#[derive(Clone, Copy)]
struct Undo {
    entry: usize,
    value: usize,
    mask: usize,
}

/// Where the write set stood when a checkpoint was taken, and how many blocks the
/// attempt had allocated then.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Checkpoint {
    entries: usize,
    undo: usize,
    allocations: usize,
}

/// The filter bit of `addr`: one of 64, chosen by the word's address. A write sets
/// the bit of its address; a read whose bit is clear cannot hit the write set
/// (tinySTM's `USE_BLOOM_FILTER`, one word wide).
#[inline]
fn filter_bit(addr: usize) -> u64 {
    filter_bit_of_word(addr / std::mem::size_of::<usize>())
}

/// [`filter_bit`] of the word with index `word` (its address divided by the word's
/// size).
#[inline(always)]
fn filter_bit_of_word(word: usize) -> u64 {
    1 << (word % 64)
}

/// The buffered writes of an attempt.
///
/// # Invariants
/// - At most one entry per address.
/// - `filter` has the bit of every address in the set (it may have more: bits of
///   entries rolled back to a checkpoint, or of writes that went on to the full path
///   and failed, stay until the set is cleared).
/// - `room <= entries.items.capacity()`; while the entries are indexed, `room` is at
///   most what their index may hold, and otherwise at most `LINEAR_MAX`. So
///   [`WriteSet::write`] appends below `room` with neither growth nor rehash.
/// - `protected` is the `entries` of the newest open checkpoint, 0 when none is open.
#[derive(Default)]
pub(crate) struct WriteSet {
    entries: KeyedVec<WriteEntry>,
    filter: u64,
    room: usize,
    protected: usize,
    undo: Vec<Undo>,
    checkpoints: Vec<Checkpoint>,
}

impl WriteSet {
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.items.is_empty()
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.entries.items.len()
    }

    #[inline]
    pub(crate) fn entries(&self) -> &[WriteEntry] {
        &self.entries.items
    }

    /// Whether `addr` may have been written: false means it certainly was not.
    #[inline]
    pub(crate) fn may_contain(&self, addr: usize) -> bool {
        self.may_contain_word(addr / std::mem::size_of::<usize>())
    }

    /// [`WriteSet::may_contain`] for the word with index `word` (its address divided
    /// by the word's size).
    #[inline(always)]
    pub(crate) fn may_contain_word(&self, word: usize) -> bool {
        self.filter & filter_bit_of_word(word) != 0
    }

    pub(crate) fn get(&self, addr: usize) -> Option<&WriteEntry> {
        if !self.may_contain(addr) {
            return None;
        }
        self.entries
            .position(addr)
            .map(|at| &self.entries.items[at])
    }

    /// The inlined write: merges into the entry of `addr`, or else appends a new one
    /// (with no value to retire) while the set holds fewer entries than its room. False
    /// if it did neither, and also if the entry must first be saved for a checkpoint or
    /// another key holds the home slot of `addr` in the index: then
    /// [`WriteSet::write_probing`] finishes. (No probe loop and no call here, so that
    /// the inlined path saves no register.)
    #[inline]
    pub(crate) fn write(&mut self, addr: usize, value: usize, mask: usize) -> bool {
        let len = self.entries.items.len();
        if self.entries.indexed {
            let index = &mut self.entries.index;
            let home = index.home(addr);
            // SAFETY: home slots are inside the table (`Index`'s invariants; an
            // indexed set's table is not empty).
            let slot = unsafe { index.slot(home) };
            if slot.key == addr {
                let at = slot.at as usize;
                // The index maps only to items (type invariant), so `get_mut` never
                // fails; a failure would only take the full path.
                return at >= self.protected
                    && self
                        .entries
                        .items
                        .get_mut(at)
                        .map(|entry| entry.merge(value, mask))
                        .is_some();
            }
            if slot.key != VACANT || len >= self.room {
                return false;
            }
            // SAFETY: as above.
            unsafe { index.fill(home, addr, len) };
            self.filter |= filter_bit(addr);
        } else {
            // The filter takes the bit first (a bit too many is allowed), so that the
            // bit is not kept in a register through the search.
            let filter = self.filter;
            self.filter = filter | filter_bit(addr);
            if filter & filter_bit(addr) != 0 {
                let protected = self.protected;
                let items = self.entries.items.iter_mut().enumerate().rev();
                for (at, entry) in items {
                    if entry.addr == addr {
                        return at >= protected && {
                            entry.merge(value, mask);
                            true
                        };
                    }
                }
            }
            if len >= self.room {
                return false;
            }
        }
        self.append(addr, value, mask);
        true
    }

    /// [`WriteSet::write`] in full, probing past the home slot and saving entries for
    /// checkpoints: false only if `addr` has no entry and the set holds as many entries
    /// as its room.
    #[cold]
    #[inline(never)]
    pub(crate) fn write_probing(&mut self, addr: usize, value: usize, mask: usize) -> bool {
        let len = self.entries.items.len();
        let mut vacant = None;
        if self.entries.indexed {
            match self.entries.index.find(addr) {
                Ok(at) => {
                    self.merge(at, value, mask);
                    return true;
                }
                Err(slot) => vacant = Some(slot),
            }
        } else if let Some(at) = self.entries.position(addr) {
            self.merge(at, value, mask);
            return true;
        }
        if len >= self.room {
            return false;
        }
        if let Some(slot) = vacant {
            // SAFETY: `find` returned the slot, and the table has not changed since.
            unsafe { self.entries.index.fill(slot, addr, len) };
        }
        self.filter |= filter_bit(addr);
        self.append(addr, value, mask);
        true
    }

    /// Appends the first write to `addr`, whose filter bit is set and which the index
    /// (if any) already maps to the new entry's position. The set must hold fewer
    /// entries than its room.
    #[inline]
    fn append(&mut self, addr: usize, value: usize, mask: usize) {
        debug_assert!(self.entries.items.len() < self.room && self.may_contain(addr));
        // SAFETY: `len < room <= capacity` (type invariant).
        unsafe {
            push_unchecked(
                &mut self.entries.items,
                WriteEntry::new(addr, value, mask, None),
            );
        }
    }

    /// Merges a write into an existing entry; false if `addr` has none yet.
    #[inline]
    pub(crate) fn update(&mut self, addr: usize, value: usize, mask: usize) -> bool {
        if !self.may_contain(addr) {
            return false;
        }
        let Some(at) = self.entries.position(addr) else {
            return false;
        };
        self.merge(at, value, mask);
        true
    }

    /// Merges a write into the entry at `at`, saving it first if a checkpoint needs it.
    fn merge(&mut self, at: usize, value: usize, mask: usize) {
        let entry = &mut self.entries.items[at];
        if at < self.protected {
            self.undo.push(Undo {
                entry: at,
                value: entry.value,
                mask: entry.mask,
            });
        }
        entry.merge(value, mask);
    }

    /// Adds the first write to `entry.addr` (the caller checked there is none).
    #[inline]
    pub(crate) fn insert(&mut self, entry: WriteEntry) {
        self.filter |= filter_bit(entry.addr);
        self.entries.push(entry);
    }

    /// Lets [`WriteSet::write`] append until the set holds `room` entries, reserving
    /// the memory (and building or growing the index) for them now. Lasts until the
    /// set is cleared, which brings the room back to at most `LINEAR_MAX`.
    #[cold]
    pub(crate) fn allow(&mut self, room: usize) {
        let items = &mut self.entries.items;
        items.reserve(room.saturating_sub(items.len()));
        if room > LINEAR_MAX {
            self.entries.index_for(room);
        }
        self.room = room;
    }

    /// Opens a checkpoint; `allocations` is the number of blocks the attempt has
    /// allocated so far (see [`WriteSet::allocations_at_checkpoint`]).
    pub(crate) fn checkpoint(&mut self, allocations: usize) -> Checkpoint {
        let checkpoint = Checkpoint {
            entries: self.len(),
            undo: self.undo.len(),
            allocations,
        };
        self.checkpoints.push(checkpoint);
        self.protected = checkpoint.entries;
        checkpoint
    }

    /// The blocks the attempt had allocated when the newest open checkpoint was taken
    /// (0 when none is open): a block allocated at or after that position is undone
    /// with the checkpoint, one allocated before it survives a roll back.
    #[inline]
    pub(crate) fn allocations_at_checkpoint(&self) -> usize {
        self.checkpoints.last().map_or(0, |c| c.allocations)
    }

    /// Forgets the newest checkpoint, keeping its writes (its undo records stay for
    /// older checkpoints).
    pub(crate) fn keep(&mut self, checkpoint: Checkpoint) {
        let popped = self.checkpoints.pop();
        debug_assert!(popped.is_some_and(|p| p.entries == checkpoint.entries));
        self.protected = self.checkpoints.last().map_or(0, |c| c.entries);
        if self.checkpoints.is_empty() {
            self.undo.clear();
        }
    }

    /// Undoes every write made since `checkpoint` and forgets it.
    pub(crate) fn roll_back_to(&mut self, checkpoint: Checkpoint) {
        self.checkpoints.pop();
        self.protected = self.checkpoints.last().map_or(0, |c| c.entries);
        for undo in self.undo.drain(checkpoint.undo..).rev() {
            if let Some(entry) = self.entries.items.get_mut(undo.entry) {
                entry.value = undo.value;
                entry.mask = undo.mask;
            }
        }
        self.entries.truncate(checkpoint.entries);
    }

    /// Empties the set, in time proportional to its size.
    #[inline]
    pub(crate) fn clear(&mut self) {
        if self.entries.indexed {
            self.entries.clear_indexed();
            // Unindexed again (and perhaps given back): see the type's invariants.
            self.room = self.room.min(LINEAR_MAX).min(self.entries.items.capacity());
        } else {
            // `room` already meets the unindexed bounds (the type's invariants).
            self.entries.clear();
        }
        self.filter = 0;
        if !self.checkpoints.is_empty() || !self.undo.is_empty() {
            self.undo.clear();
            self.checkpoints.clear();
            self.protected = 0;
        }
    }

    /// Whether clearing would have to give back a large table (for tests).
    #[cfg(test)]
    fn retains_large_table(&self) -> bool {
        self.entries.retains_large_table()
    }

    /// Checks the type's invariants (for tests).
    #[cfg(test)]
    fn check_invariants(&self) {
        self.entries.check_invariants();
        let entries = &self.entries;
        assert!(self.room <= entries.items.capacity());
        if entries.indexed {
            assert!(self.room <= entries.index.limit());
        } else {
            assert!(self.room <= LINEAR_MAX);
        }
        let newest = self.checkpoints.last().map_or(0, |c| c.entries);
        assert_eq!(self.protected, newest);
        for entry in &entries.items {
            assert!(self.may_contain(entry.addr));
        }
    }
}

/// Records locked by this attempt, with the version each held before.
#[derive(Default)]
pub(crate) struct LockSet {
    held: KeyedVec<ReadEntry>,
}

impl LockSet {
    #[inline]
    pub(crate) fn push(&mut self, orec: usize, version: u64) {
        self.held.push(ReadEntry { orec, version });
    }

    /// The version `orec` had when this attempt locked it.
    pub(crate) fn version_before(&self, orec: usize) -> Option<u64> {
        self.held
            .position(orec)
            .map(|at| self.held.items[at].version)
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.held.items.is_empty()
    }

    #[inline]
    pub(crate) fn held(&self) -> &[ReadEntry] {
        &self.held.items
    }

    /// Empties the set, in time proportional to its size.
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.held.clear();
    }
}

/// Memory this attempt allocated, or asked to free.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Block {
    pub(crate) addr: usize,
    pub(crate) size: usize,
    pub(crate) release: Release,
    /// A value allocated for a boxed `TVar` write: released at commit unless it is the
    /// value finally written.
    pub(crate) tvar_value: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(addr: usize, value: usize) -> WriteEntry {
        WriteEntry {
            addr,
            value,
            mask: usize::MAX,
            retire_old: None,
        }
    }

    #[test]
    fn masked_updates_merge_bits() {
        let mut set = WriteSet::default();
        set.insert(WriteEntry {
            addr: 8,
            value: 0x00ff,
            mask: 0x00ff,
            retire_old: None,
        });
        assert!(set.update(8, 0xab00, 0xff00));
        let written = set.get(8).unwrap();
        assert_eq!(written.mask, 0xffff);
        assert_eq!(written.merged_with(0x1234_0000), 0x1234_abff);
    }

    #[test]
    fn nested_checkpoints_restore_what_each_saw() {
        let mut set = WriteSet::default();
        set.insert(entry(8, 1));
        let outer = set.checkpoint(0);
        set.update(8, 2, usize::MAX);
        set.insert(entry(16, 20));
        let inner = set.checkpoint(0);
        set.update(8, 3, usize::MAX);
        set.update(16, 21, usize::MAX);
        set.insert(entry(24, 30));
        set.roll_back_to(inner);
        assert_eq!(set.get(8).unwrap().value, 2);
        assert_eq!(set.get(16).unwrap().value, 20);
        assert!(set.get(24).is_none());
        set.update(8, 4, usize::MAX);
        set.roll_back_to(outer);
        assert_eq!(set.get(8).unwrap().value, 1);
        assert!(set.get(16).is_none());
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn large_sets_index_and_clear_back_to_small() {
        let mut set = WriteSet::default();
        for at in 0..100_000usize {
            set.insert(entry(8 * (at + 1), at));
        }
        assert_eq!(set.get(8 * 50_001).map(|e| e.value), Some(50_000));
        assert!(set.retains_large_table());
        set.clear();
        // What a later small transaction pays no longer depends on the big one.
        assert!(!set.retains_large_table());
        assert!(!set.entries.indexed);
        set.insert(entry(8, 1));
        assert_eq!(set.get(8).map(|e| e.value), Some(1));
        assert!(set.get(16).is_none());
    }

    #[test]
    fn rolled_back_entries_leave_the_index() {
        let mut set = WriteSet::default();
        let checkpoint = set.checkpoint(0);
        for at in 0..(LINEAR_MAX * 3) {
            set.insert(entry(8 * (at + 1), at));
        }
        set.roll_back_to(checkpoint);
        assert!(set.is_empty());
        for at in 0..(LINEAR_MAX * 3) {
            assert!(set.get(8 * (at + 1)).is_none());
        }
        set.insert(entry(8, 7));
        assert_eq!(set.get(8).map(|e| e.value), Some(7));
    }

    #[test]
    fn lock_set_finds_versions_small_and_large() {
        let mut locks = LockSet::default();
        for orec in 0..(LINEAR_MAX as u64 * 4) {
            locks.push(orec as usize, orec + 100);
            assert_eq!(locks.version_before(orec as usize), Some(orec + 100));
        }
        assert_eq!(locks.version_before(3), Some(103));
        assert_eq!(locks.version_before(1000), None);
        locks.clear();
        assert!(locks.is_empty());
        assert_eq!(locks.version_before(3), None);
    }

    #[test]
    fn kept_checkpoints_still_roll_back_with_their_parent() {
        let mut set = WriteSet::default();
        set.insert(entry(8, 1));
        let outer = set.checkpoint(0);
        let inner = set.checkpoint(0);
        set.update(8, 2, usize::MAX);
        set.keep(inner);
        set.roll_back_to(outer);
        assert_eq!(set.get(8).unwrap().value, 1);
    }

    #[test]
    fn a_huge_attempt_leaves_later_small_ones_as_cheap_as_before() {
        // 200,000 writes the way the engine makes them: inlined while there is room,
        // otherwise inserted and granted room up to the next power of two.
        let mut set = WriteSet::default();
        let mut locks = LockSet::default();
        for at in 0..200_000usize {
            let addr = 8 * (at + 1);
            if !set.write(addr, at, usize::MAX) && !set.write_probing(addr, at, usize::MAX) {
                set.insert(entry(addr, at));
                set.allow((set.len() + 1).next_power_of_two().max(LINEAR_MAX));
            }
            locks.push(at, at as u64);
        }
        assert_eq!(set.len(), 200_000);
        assert_eq!(set.get(8 * 123_457).map(|e| e.value), Some(123_456));
        assert_eq!(locks.version_before(123_456), Some(123_456));
        assert!(set.retains_large_table() && locks.held.retains_large_table());
        set.clear();
        locks.clear();
        // By construction, what a later small attempt pays no longer depends on the
        // huge one: the memory is given back, the sets are searched linearly again
        // and the inlined path's room is back to at most `LINEAR_MAX`.
        assert!(!set.retains_large_table() && !locks.held.retains_large_table());
        assert!(!set.entries.indexed && !locks.held.indexed);
        assert!(set.room <= LINEAR_MAX);
        set.check_invariants();
        locks.held.check_invariants();
        set.allow(LINEAR_MAX);
        assert!(set.write(8, 1, usize::MAX));
        assert_eq!(set.get(8).map(|e| e.value), Some(1));
        assert!(set.get(16).is_none());
    }

    #[test]
    fn clearing_a_small_indexed_set_keeps_its_table_and_empties_it() {
        let mut set = WriteSet::default();
        for round in 0..3 {
            set.allow(KEPT_CAPACITY);
            for at in 0..(LINEAR_MAX * 2) {
                assert!(set.write(8 * (at + 1) + round * 4096, at, usize::MAX));
            }
            assert!(set.entries.indexed);
            set.check_invariants();
            let slots = set.entries.index.slots.len();
            set.clear();
            // Kept for the next attempt (no allocation), and emptied key by key.
            assert_eq!(set.entries.index.slots.len(), slots);
            set.check_invariants();
        }
    }

    /// A step of the write-set model test.
    #[derive(Clone, Debug)]
    enum Step {
        /// A write as `Core::store` makes it.
        Write {
            addr: usize,
            value: usize,
            mask: usize,
        },
        /// `count` first writes of consecutive or strided words (to grow the index).
        Many {
            first: usize,
            count: usize,
            stride: usize,
        },
        Checkpoint,
        RollBack,
        Keep,
        Clear,
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        let masks = prop_oneof![Just(usize::MAX), Just(0xff), Just(0xff00), any::<usize>()];
        prop_oneof![
            8 => (0..96usize, any::<usize>(), masks).prop_map(|(word, value, mask)| {
                // Words 0..64 at one stride, the rest 4 KiB apart: both share filter
                // bits and home slots.
                let addr = if word < 64 { 8 * (word + 1) } else { 4096 * word };
                Step::Write { addr, value, mask }
            }),
            1 => (0..2000usize, 1..300usize, prop_oneof![Just(1usize), Just(8), Just(512)])
                .prop_map(|(first, count, stride)| Step::Many { first, count, stride }),
            1 => Just(Step::Checkpoint),
            1 => Just(Step::RollBack),
            1 => Just(Step::Keep),
            1 => Just(Step::Clear),
        ]
    }

    /// Writes as `Core::store` does: the inlined path, then the full one (which grants
    /// room up to the next power of two when `grant` is set, as under commit-time
    /// locking with a large set limit).
    fn store(set: &mut WriteSet, grant: bool, addr: usize, value: usize, mask: usize) {
        if set.write(addr, value, mask) || set.write_probing(addr, value, mask) {
            return;
        }
        if !set.update(addr, value, mask) {
            set.insert(WriteEntry::new(addr, value, mask, None));
            if grant {
                set.allow((set.len() + 1).next_power_of_two().max(LINEAR_MAX));
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 256,
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// The write set against a sequential model (address -> value and mask), with
        /// a stack of snapshots for the checkpoints.
        #[test]
        fn write_set_matches_a_model(
            grant in proptest::prelude::any::<bool>(),
            steps in proptest::collection::vec(step(), 1..120),
        ) {
            use std::collections::BTreeMap;
            type Model = BTreeMap<usize, (usize, usize)>;
            fn apply(model: &mut Model, addr: usize, value: usize, mask: usize) {
                let entry = model.entry(addr).or_insert((0, 0));
                entry.0 = (entry.0 & !mask) | (value & mask);
                entry.1 |= mask;
            }
            let mut set = WriteSet::default();
            let mut model = Model::new();
            let mut open: Vec<(Checkpoint, Model)> = Vec::new();
            for step in steps {
                match step {
                    Step::Write { addr, value, mask } => {
                        store(&mut set, grant, addr, value, mask);
                        apply(&mut model, addr, value, mask);
                    }
                    Step::Many { first, count, stride } => {
                        for at in first..first + count {
                            let addr = 8 * stride * (at + 1);
                            store(&mut set, grant, addr, at, usize::MAX);
                            apply(&mut model, addr, at, usize::MAX);
                        }
                    }
                    Step::Checkpoint => {
                        open.push((set.checkpoint(open.len()), model.clone()));
                    }
                    Step::RollBack => {
                        if let Some((checkpoint, before)) = open.pop() {
                            set.roll_back_to(checkpoint);
                            model = before;
                        }
                    }
                    Step::Keep => {
                        if let Some((checkpoint, _)) = open.pop() {
                            set.keep(checkpoint);
                        }
                    }
                    Step::Clear => {
                        set.clear();
                        model.clear();
                        open.clear();
                    }
                }
                set.check_invariants();
                proptest::prop_assert_eq!(set.len(), model.len());
                proptest::prop_assert_eq!(set.allocations_at_checkpoint(), open.len().saturating_sub(1));
                let mut seen = BTreeMap::new();
                for entry in set.entries() {
                    let (value, mask) = (entry.value & entry.mask, entry.mask);
                    proptest::prop_assert!(seen.insert(entry.addr, (value, mask)).is_none());
                }
                proptest::prop_assert_eq!(&seen, &model);
                for (&addr, &(value, mask)) in &model {
                    let found = set.get(addr).map(|e| (e.value & e.mask, e.mask));
                    proptest::prop_assert_eq!(found, Some((value, mask)));
                }
                for absent in [8 * 97, 4096 * 97, 8 * 8 * 100_000] {
                    proptest::prop_assert!(model.contains_key(&absent) || set.get(absent).is_none());
                }
            }
        }

        /// The lock set against a map, across clears.
        #[test]
        fn lock_set_matches_a_model(
            rounds in proptest::collection::vec(proptest::collection::vec(0..5000usize, 0..200), 1..6),
        ) {
            let mut locks = LockSet::default();
            for orecs in rounds {
                let mut model = std::collections::BTreeMap::new();
                for orec in orecs {
                    if let std::collections::btree_map::Entry::Vacant(slot) = model.entry(orec) {
                        slot.insert(orec as u64 * 3);
                        locks.push(orec, orec as u64 * 3);
                    }
                }
                locks.held.check_invariants();
                for orec in 0..5000 {
                    proptest::prop_assert_eq!(locks.version_before(orec), model.get(&orec).copied());
                }
                locks.clear();
                locks.held.check_invariants();
                proptest::prop_assert!(locks.is_empty());
            }
        }
    }
}
