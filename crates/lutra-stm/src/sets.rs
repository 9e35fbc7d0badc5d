//! The read set, the write set (with `or_else` checkpoints) and the lock set of one
//! transaction attempt.
//!
//! Sets are found by key linearly while small (up to `LINEAR_MAX` entries) and through
//! a hash index built when they outgrow that; the write set also keeps a one-word
//! filter of the addresses written, so most reads never search it. Clearing costs at
//! most a constant times the set's size, never its past capacity: one huge attempt
//! does not slow every later small one.
//!
//! # Invariants
//! - The write set holds at most one entry per address; while indexed, the index maps
//!   each address to its entry; the filter has the bit of every address in the set.
//! - An entry's buffered value counts only in the bits of its mask; the other bits come
//!   from memory at commit.
//! - While a checkpoint is open, every change to an entry older than the checkpoint is
//!   preceded by an undo record, so rolling back to the checkpoint restores every entry
//!   as it was when the checkpoint was taken.

use crate::epoch::Release;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

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
        let mixed = (value ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
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

    /// The word to store, given the word currently in memory.
    #[inline]
    pub(crate) fn merged_with(&self, memory: usize) -> usize {
        (memory & !self.mask) | (self.value & self.mask)
    }
}

/// Sets up to this size are searched linearly; larger ones through a hash index, built
/// when the set first outgrows it and emptied entry by entry (never by
/// `HashMap::clear`, whose cost is the table's capacity, not its contents).
pub(crate) const LINEAR_MAX: usize = 8;

/// Vectors that grew past this capacity are given back when cleared, so one huge
/// transaction does not keep its memory for the life of the thread.
const KEPT_CAPACITY: usize = 1 << 12;

/// A vector of entries with distinct keys, found by key: linearly while small, through
/// a lazily built index once large. Clearing costs the number of entries.
///
/// # Invariants
/// - `index` is empty unless `items.len() > LINEAR_MAX` at some point since the last
///   clear; while `indexed`, it maps the key of every item to its position, and
///   nothing else.
struct KeyedVec<T> {
    items: Vec<T>,
    index: WordMap<usize>,
    indexed: bool,
    key: fn(&T) -> usize,
}

impl<T> KeyedVec<T> {
    fn new(key: fn(&T) -> usize) -> Self {
        Self {
            items: Vec::new(),
            index: WordMap::default(),
            indexed: false,
            key,
        }
    }

    #[inline]
    fn position(&self, key: usize) -> Option<usize> {
        if self.indexed {
            return self.index.get(&key).copied();
        }
        self.items.iter().rposition(|item| (self.key)(item) == key)
    }

    #[inline]
    fn push(&mut self, item: T) {
        if self.indexed {
            self.index.insert((self.key)(&item), self.items.len());
        }
        self.items.push(item);
        if !self.indexed && self.items.len() > LINEAR_MAX {
            self.build_index();
        }
    }

    #[cold]
    fn build_index(&mut self) {
        for (at, item) in self.items.iter().enumerate() {
            self.index.insert((self.key)(item), at);
        }
        self.indexed = true;
    }

    /// Drops the items from `len` on.
    fn truncate(&mut self, len: usize) {
        if self.indexed {
            for item in &self.items[len.min(self.items.len())..] {
                self.index.remove(&(self.key)(item));
            }
        }
        self.items.truncate(len);
    }

    #[inline]
    fn clear(&mut self) {
        if self.indexed || self.items.capacity() > KEPT_CAPACITY {
            self.clear_large();
        } else {
            self.items.clear();
        }
    }

    #[cold]
    fn clear_large(&mut self) {
        if self.items.capacity() > KEPT_CAPACITY {
            // Give the memory back: dropping costs nothing per entry.
            self.items = Vec::new();
            self.index = WordMap::default();
        } else if self.indexed && self.items.len() * 8 >= self.index.capacity() {
            // Mostly full: wiping the whole table is cheaper than removing each key,
            // and its cost is still within a constant of the set's size.
            self.items.clear();
            self.index.clear();
        } else {
            self.truncate(0);
        }
        self.indexed = false;
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
    1 << ((addr / std::mem::size_of::<usize>()) % 64)
}

/// The buffered writes of an attempt.
///
/// # Invariants
/// - At most one entry per address.
/// - `filter` has the bit of every address in the set (it may have more: bits of
///   entries rolled back to a checkpoint stay until the set is cleared).
pub(crate) struct WriteSet {
    entries: KeyedVec<WriteEntry>,
    filter: u64,
    undo: Vec<Undo>,
    checkpoints: Vec<Checkpoint>,
}

impl Default for WriteSet {
    fn default() -> Self {
        Self {
            entries: KeyedVec::new(|entry| entry.addr),
            filter: 0,
            undo: Vec::new(),
            checkpoints: Vec::new(),
        }
    }
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

    /// Whether a new entry can be added without building the index.
    #[inline]
    pub(crate) fn has_linear_room(&self, room: usize) -> bool {
        self.entries.items.len() < room
    }

    /// Whether `addr` may have been written: false means it certainly was not.
    #[inline]
    pub(crate) fn may_contain(&self, addr: usize) -> bool {
        self.filter & filter_bit(addr) != 0
    }

    pub(crate) fn get(&self, addr: usize) -> Option<&WriteEntry> {
        if !self.may_contain(addr) {
            return None;
        }
        self.entries
            .position(addr)
            .map(|at| &self.entries.items[at])
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
        let entry = &mut self.entries.items[at];
        if let Some(checkpoint) = self.checkpoints.last()
            && at < checkpoint.entries
        {
            self.undo.push(Undo {
                entry: at,
                value: entry.value,
                mask: entry.mask,
            });
        }
        entry.value = (entry.value & !mask) | (value & mask);
        entry.mask |= mask;
        true
    }

    /// Adds the first write to `entry.addr` (the caller checked there is none).
    #[inline]
    pub(crate) fn insert(&mut self, entry: WriteEntry) {
        self.filter |= filter_bit(entry.addr);
        self.entries.push(entry);
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
        if self.checkpoints.is_empty() {
            self.undo.clear();
        }
    }

    /// Undoes every write made since `checkpoint` and forgets it.
    pub(crate) fn roll_back_to(&mut self, checkpoint: Checkpoint) {
        self.checkpoints.pop();
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
        self.entries.clear();
        self.filter = 0;
        if !self.checkpoints.is_empty() || !self.undo.is_empty() {
            self.undo.clear();
            self.checkpoints.clear();
        }
    }

    /// Whether clearing would have to give back a large table (for tests).
    #[cfg(test)]
    fn retains_large_table(&self) -> bool {
        self.entries.items.capacity() > KEPT_CAPACITY
            || self.entries.index.capacity() > KEPT_CAPACITY
    }
}

/// Records locked by this attempt, with the version each held before.
pub(crate) struct LockSet {
    held: KeyedVec<ReadEntry>,
}

impl Default for LockSet {
    fn default() -> Self {
        Self {
            held: KeyedVec::new(|held| held.orec),
        }
    }
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
}
