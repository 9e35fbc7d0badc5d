//! The read set, the write set (with `or_else` checkpoints) and the lock set of one
//! transaction attempt.
//!
//! # Invariants
//! - The write set holds at most one entry per address; `index` maps each address to
//!   its entry.
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
    /// The word to store, given the word currently in memory.
    pub(crate) fn merged_with(&self, memory: usize) -> usize {
        (memory & !self.mask) | (self.value & self.mask)
    }
}

#[derive(Clone, Copy)]
struct Undo {
    entry: usize,
    value: usize,
    mask: usize,
}

/// Where the write set stood when a checkpoint was taken.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Checkpoint {
    entries: usize,
    undo: usize,
}

#[derive(Default)]
pub(crate) struct WriteSet {
    entries: Vec<WriteEntry>,
    index: WordMap<usize>,
    undo: Vec<Undo>,
    checkpoints: Vec<Checkpoint>,
}

impl WriteSet {
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn entries(&self) -> &[WriteEntry] {
        &self.entries
    }

    pub(crate) fn get(&self, addr: usize) -> Option<&WriteEntry> {
        if self.entries.is_empty() {
            return None;
        }
        self.index.get(&addr).map(|&at| &self.entries[at])
    }

    /// Merges a write into an existing entry; false if `addr` has none yet.
    pub(crate) fn update(&mut self, addr: usize, value: usize, mask: usize) -> bool {
        let Some(&at) = self.index.get(&addr) else {
            return false;
        };
        let entry = &mut self.entries[at];
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

    pub(crate) fn insert(&mut self, entry: WriteEntry) {
        self.index.insert(entry.addr, self.entries.len());
        self.entries.push(entry);
    }

    pub(crate) fn checkpoint(&mut self) -> Checkpoint {
        let checkpoint = Checkpoint {
            entries: self.entries.len(),
            undo: self.undo.len(),
        };
        self.checkpoints.push(checkpoint);
        checkpoint
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
            if let Some(entry) = self.entries.get_mut(undo.entry) {
                entry.value = undo.value;
                entry.mask = undo.mask;
            }
        }
        for entry in self.entries.drain(checkpoint.entries..) {
            self.index.remove(&entry.addr);
        }
    }

    pub(crate) fn clear(&mut self) {
        // An empty map would still wipe its whole table: skip it.
        if !self.entries.is_empty() {
            self.entries.clear();
            self.index.clear();
        }
        self.undo.clear();
        self.checkpoints.clear();
    }
}

/// Records locked by this attempt, with the version each held before.
#[derive(Default)]
pub(crate) struct LockSet {
    held: Vec<ReadEntry>,
    index: WordMap<u64>,
}

impl LockSet {
    pub(crate) fn push(&mut self, orec: usize, version: u64) {
        self.held.push(ReadEntry { orec, version });
        self.index.insert(orec, version);
    }

    /// The version `orec` had when this attempt locked it.
    pub(crate) fn version_before(&self, orec: usize) -> Option<u64> {
        self.index.get(&orec).copied()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    pub(crate) fn held(&self) -> &[ReadEntry] {
        &self.held
    }

    pub(crate) fn clear(&mut self) {
        if !self.held.is_empty() {
            self.held.clear();
            self.index.clear();
        }
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
        let outer = set.checkpoint();
        set.update(8, 2, usize::MAX);
        set.insert(entry(16, 20));
        let inner = set.checkpoint();
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
    fn kept_checkpoints_still_roll_back_with_their_parent() {
        let mut set = WriteSet::default();
        set.insert(entry(8, 1));
        let outer = set.checkpoint();
        let inner = set.checkpoint();
        set.update(8, 2, usize::MAX);
        set.keep(inner);
        set.roll_back_to(outer);
        assert_eq!(set.get(8).unwrap().value, 1);
    }
}
