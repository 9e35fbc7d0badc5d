//! The write set (with `or_else` checkpoints) and the lock set of one transaction
//! attempt, over the keyed vectors of `keyed.rs`. The write set also keeps a
//! one-word filter of the addresses written, so most reads never search it. Vectors
//! and tables that grew past a bound are given back when cleared: one huge attempt
//! does not slow, nor keep memory for, every later small one.
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

use crate::global::epoch::Release;
use crate::global::orec::RecordMapping;
use crate::sets::keyed::*;
pub(crate) use crate::sets::keyed::{ReadEntry, WordMap, WriteEntry};

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
/// - `room_before <= KEPT_CAPACITY`.
#[derive(Default)]
pub(crate) struct WriteSet {
    entries: KeyedVec<WriteEntry>,
    filter: u64,
    room: usize,
    /// The room the last attempt whose set was indexed had been granted, as far as
    /// its memory was kept: [`WriteSet::room_hint`].
    room_before: usize,
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

    #[inline]
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
    /// the inlined path saves no register; always inlined, for the same reason.)
    ///
    /// A new entry is guarded by its record under the mapping `M`; a word is always
    /// written through the same mapping (`orec.rs`), so a merge keeps the record.
    #[inline(always)]
    pub(crate) fn write<M: RecordMapping>(
        &mut self,
        addr: usize,
        value: usize,
        mask: usize,
    ) -> bool {
        let len = self.entries.items.len();
        if self.entries.indexed {
            let index = &mut self.entries.index;
            let home = index.home(addr);
            // SAFETY: home slots are inside the table (`Index`'s invariants; an
            // indexed set's table is not empty).
            let slot = unsafe { index.slot(home) };
            let occupied = index.holds(slot);
            if occupied && slot.key == addr {
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
            if occupied || len >= self.room {
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
        self.append::<M>(addr, value, mask);
        true
    }

    /// [`WriteSet::write`] in full, probing past the home slot and saving entries for
    /// checkpoints: false only if `addr` has no entry and the set holds as many entries
    /// as its room.
    #[cold]
    #[inline(never)]
    pub(crate) fn write_probing<M: RecordMapping>(
        &mut self,
        addr: usize,
        value: usize,
        mask: usize,
    ) -> bool {
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
        self.append::<M>(addr, value, mask);
        true
    }

    /// Appends the first write to `addr`, whose filter bit is set and which the index
    /// (if any) already maps to the new entry's position. The set must hold fewer
    /// entries than its room.
    #[inline]
    fn append<M: RecordMapping>(&mut self, addr: usize, value: usize, mask: usize) {
        debug_assert!(self.entries.items.len() < self.room && self.may_contain(addr));
        // SAFETY: `len < room <= capacity` (type invariant).
        unsafe {
            push_unchecked(
                &mut self.entries.items,
                WriteEntry::new::<M>(addr, value, mask, None),
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

    /// The room to grant at once when the inlined path first runs out of it: what the
    /// last attempt that outgrew `LINEAR_MAX` entries was granted, so that a
    /// descriptor whose attempts write alike grows its room (and indexes its set) once
    /// per attempt rather than at every power of two.
    #[inline]
    pub(crate) fn room_hint(&self) -> usize {
        self.room_before
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

    /// Empties the set, in time proportional to its size. A set indexed for an
    /// attempt that outgrew `LINEAR_MAX` entries stays indexed (its table emptied by
    /// a new generation) unless its memory is given back: a descriptor whose attempts
    /// write alike indexes its table once, not at every attempt. Any other indexed
    /// set is searched linearly again, so that a small attempt after a large one
    /// pays for the large one at most once.
    #[inline]
    pub(crate) fn clear(&mut self) {
        if self.entries.indexed {
            let room = self.room;
            if self.entries.items.len() > LINEAR_MAX {
                self.entries.clear_staying_indexed();
            } else {
                self.entries.clear_indexed();
            }
            // A hint only while the memory is kept: after a huge attempt, the next
            // one to outgrow `LINEAR_MAX` entries grows as from scratch.
            self.room_before = room.min(self.entries.items.capacity()).min(KEPT_CAPACITY);
            // The inlined path's room is back to its first step (and within the
            // unindexed bounds of the type's invariants if the set is unindexed).
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
        assert!(self.room_before <= KEPT_CAPACITY);
        let newest = self.checkpoints.last().map_or(0, |c| c.entries);
        assert_eq!(self.protected, newest);
        for entry in &entries.items {
            assert!(self.may_contain(entry.addr));
        }
    }
}

/// Records locked by this attempt, with the version each held before, in the order
/// locked.
///
/// A commit locks every written record and never looks one up unless it meets a
/// record it locked itself (two written words under one record, or a read of a
/// written word checked by validation): so a lock is one append, and only a lookup
/// ([`LockSet::version_before`]) indexes the set, catching up with the records locked
/// since the last one.
///
/// # Invariants
/// - At most one entry per record.
/// - `indexed <= held.len()`; `index` maps the record of every entry of
///   `held[..indexed]` to its position and holds nothing else (so it is empty when
///   `indexed` is 0), and it was built by inserting them in position order (`Index`).
#[derive(Default)]
pub(crate) struct LockSet {
    held: Vec<ReadEntry>,
    index: Index,
    indexed: usize,
}

impl LockSet {
    #[inline]
    pub(crate) fn push(&mut self, orec: usize, version: u64) {
        self.held.push(ReadEntry { orec, version });
    }

    /// The version `orec` had when this attempt locked it: searched linearly in a
    /// small set, through the index (brought up to date first) in a large one.
    #[inline]
    pub(crate) fn version_before(&mut self, orec: usize) -> Option<u64> {
        let at = if self.held.len() <= LINEAR_MAX {
            self.held.iter().rposition(|held| held.orec == orec)
        } else {
            if self.indexed < self.held.len() {
                self.catch_up();
            }
            self.index.position(orec)
        };
        at.map(|at| self.held[at].version)
    }

    /// Indexes the entries locked since the last lookup, in a table grown (and
    /// rebuilt) first if it cannot hold them all.
    #[cold]
    #[inline(never)]
    fn catch_up(&mut self) {
        let len = self.held.len();
        if self.index.limit() < len {
            self.index = Index::with_slots(slots_for(len));
            self.indexed = 0;
        }
        // Position order: see `Index`'s invariants.
        for (at, held) in self.held.iter().enumerate().skip(self.indexed) {
            self.index.insert(held.orec, at);
        }
        self.indexed = len;
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    #[inline]
    pub(crate) fn held(&self) -> &[ReadEntry] {
        &self.held
    }

    /// Empties the set, in time proportional to its size; a vector or a table grown
    /// past what the sets keep is given back.
    #[inline]
    pub(crate) fn clear(&mut self) {
        if self.held.capacity() > KEPT_CAPACITY {
            self.held = Vec::new();
        } else {
            self.held.clear();
        }
        if self.indexed > 0 {
            self.clear_index();
        }
    }

    /// The end of [`LockSet::clear`] once a lookup indexed the set.
    #[cold]
    fn clear_index(&mut self) {
        self.indexed = 0;
        if self.index.slots.len() > KEPT_SLOTS {
            self.index = Index::default();
        } else {
            self.index.clear();
        }
    }

    /// Whether clearing would have to give back a large vector or table (for tests).
    #[cfg(test)]
    fn retains_large_table(&self) -> bool {
        self.held.capacity() > KEPT_CAPACITY || self.index.slots.len() > KEPT_SLOTS
    }

    /// Checks the type's invariants (for tests).
    #[cfg(test)]
    fn check_invariants(&self) {
        let index = &self.index;
        assert!(self.indexed <= self.held.len());
        let occupied = index.slots.iter().filter(|s| index.holds(**s)).count();
        assert_eq!(occupied, self.indexed);
        let mut rebuilt = Index::with_slots(index.slots.len().max(MIN_SLOTS));
        for (at, held) in self.held[..self.indexed].iter().enumerate() {
            assert_eq!(index.find(held.orec), Ok(at));
            rebuilt.insert(held.orec, at);
        }
        if !index.slots.is_empty() {
            assert!(index.matches(&rebuilt));
        }
        let mut orecs: Vec<usize> = self.held.iter().map(|held| held.orec).collect();
        orecs.sort_unstable();
        orecs.dedup();
        assert_eq!(orecs.len(), self.held.len());
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
mod tests;
