//! The read set of one transaction attempt: the records read, with the versions seen,
//! appended through a cursor so that the inlined read path (`Core::try_load`) pays
//! one compare for its room and three stores for its entry.
//!
//! Entries live in the spare capacity of a vector whose length stays 0: `end` points
//! one past the last entry, and `room` is where the inlined path must stop (its
//! `end < room` is false when `room` is null, the *closed* set). The full path
//! ([`ReadSet::push`]) appends up to the capacity and grows it.
//!
//! `end`, `room` and the attempt's mode (`mode.rs`: whether its reads go straight
//! to memory) make the set's [`ReadFront`], in a C layout whose all-zero value is a valid closed front:
//! the C ABI keeps a thread-local pointer to its thread's front, or to a closed one
//! (see [`TxDescriptor::try_load_through_front`](crate::TxDescriptor::try_load_through_front)),
//! so that its read tests the room first, with no test of the pointer.
//!
//! # Invariants
//! - `base <= end <= base + capacity`, where `base` is the storage's buffer: the
//!   entries are exactly `base..end`, all initialised.
//! - `stop` lies in `base..=base + capacity`; `room` is null or at most `stop`
//!   ([`ReadSet::open`], [`ReadSet::restrict`]); the inlined path appends only while
//!   `end < room`, so never past the capacity.
//! - The set is closed while a solo attempt runs.
//! - The pointers point into the storage's heap buffer (or are its dangling start
//!   when it has none), so moving the set keeps them valid; every change of the
//!   buffer (growth, release) re-derives them.

use crate::attempt::mode::Mode;
use crate::sets::write_set::ReadEntry;

/// The next entry's place, for the inlined read path ([`ReadSet::fast_slot`]).
pub(crate) struct FastSlot(*mut ReadEntry);

/// The part of a read set that the inlined read path reads (see the module header).
/// All zero, it is closed: no room, no plain reads.
#[repr(C)]
pub struct ReadFront {
    /// One past the last entry.
    end: *mut ReadEntry,
    /// Where the inlined read path stops appending; null while it may not append.
    room: *mut ReadEntry,
    /// The mode of the descriptor's attempt (`mode.rs`), the one place it is kept.
    pub(crate) mode: Mode,
}

impl ReadFront {
    /// A closed front: no room, no plain reads (all zero, as a zero-initialised C
    /// object of the same layout).
    pub const CLOSED: Self = Self {
        end: std::ptr::null_mut(),
        room: std::ptr::null_mut(),
        mode: Mode::Idle,
    };

    /// [`ReadSet::fast_slot`] of the front at `front`, read without a reference.
    ///
    /// # Safety
    /// `front` must point to a valid front.
    #[inline(always)]
    pub(crate) unsafe fn fast_slot_at(front: *const ReadFront) -> Option<FastSlot> {
        // SAFETY: a valid front (the caller's contract); plain reads of two fields.
        let (end, room) = unsafe { ((*front).end, (*front).room) };
        (end < room).then_some(FastSlot(end))
    }

    /// [`ReadSet::is_open`] of the front at `front`, read without a reference.
    ///
    /// # Safety
    /// As [`ReadFront::fast_slot_at`].
    #[inline(always)]
    pub(crate) unsafe fn is_open_at(front: *const ReadFront) -> bool {
        // SAFETY: as in `fast_slot_at`.
        !unsafe { (*front).room }.is_null()
    }

    /// [`Mode::is_unrecorded`] of the front at `front`, read without a reference.
    ///
    /// # Safety
    /// As [`ReadFront::fast_slot_at`].
    #[inline(always)]
    pub(crate) unsafe fn is_unrecorded_at(front: *const ReadFront) -> bool {
        // A volatile read, so that the compiler does not load the mode once for this
        // test and `is_plain_at`'s: the solo read's test stays one instruction on
        // memory. SAFETY: as in `fast_slot_at`; the mode is a plain byte.
        unsafe { std::ptr::read_volatile(&raw const (*front).mode) }.is_unrecorded()
    }

    /// [`Mode::is_plain`] of the front at `front`, read without a reference.
    ///
    /// # Safety
    /// As [`ReadFront::fast_slot_at`].
    #[inline(always)]
    pub(crate) unsafe fn is_plain_at(front: *const ReadFront) -> bool {
        // SAFETY: as in `fast_slot_at`.
        unsafe { (*front).mode }.is_plain()
    }
}

/// A read set; see the module header.
pub(crate) struct ReadSet {
    /// What the inlined read path reads.
    pub(crate) front: ReadFront,
    /// What [`ReadSet::open`] sets `room` to: the capacity's end, or the engine's
    /// set limit if lower ([`ReadSet::set_stop`]).
    stop: *mut ReadEntry,
    /// The buffer, used through its spare capacity (its length stays 0).
    storage: Vec<ReadEntry>,
}

// SAFETY: the pointers point into the set's own heap buffer, which it owns alone;
// nothing in it is tied to a thread.
unsafe impl Send for ReadSet {}

impl Default for ReadSet {
    fn default() -> Self {
        let mut storage = Vec::new();
        let base = storage.as_mut_ptr();
        Self {
            front: ReadFront {
                end: base,
                room: std::ptr::null_mut(),
                mode: Mode::Idle,
            },
            stop: base,
            storage,
        }
    }
}

impl ReadSet {
    fn base(&self) -> *const ReadEntry {
        self.storage.as_ptr()
    }

    /// How many entries the set holds.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        // SAFETY: `end` lies in the buffer at or after its start (invariants).
        unsafe { self.front.end.offset_from(self.base()) as usize }
    }

    /// How many entries fit before the buffer must grow.
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.storage.capacity()
    }

    /// The entries, oldest first.
    pub(crate) fn as_slice(&self) -> &[ReadEntry] {
        // SAFETY: `base..end` are initialised entries of the buffer (invariants).
        unsafe { std::slice::from_raw_parts(self.base(), self.len()) }
    }

    /// The slot the inlined path appends to next, if it has room (never while the
    /// set is closed). Read before the access, filled by [`ReadSet::fill`] after it.
    #[inline(always)]
    pub(crate) fn fast_slot(&self) -> Option<FastSlot> {
        (self.front.end < self.front.room).then_some(FastSlot(self.front.end))
    }

    /// Appends `entry` in `slot`.
    ///
    /// # Safety
    /// `slot` must come from [`ReadSet::fast_slot`] on this set, unchanged since.
    #[inline(always)]
    pub(crate) unsafe fn fill(&mut self, slot: FastSlot, entry: ReadEntry) {
        // SAFETY: `slot` is `end`, below `room <= base + capacity` (invariants and
        // the caller's contract): spare capacity, written once before `end` covers it.
        unsafe {
            slot.0.write(entry);
            self.front.end = slot.0.add(1);
        }
    }

    /// Whether the inlined path may append now (the test of [`ReadSet::fast_slot`]).
    #[inline(always)]
    pub(crate) fn has_fast_room(&self) -> bool {
        self.fast_slot().is_some()
    }

    /// Appends `entry`, growing the buffer when full ([`ReadSet::reserve_one`]).
    pub(crate) fn push(&mut self, entry: ReadEntry) {
        self.reserve_one();
        // SAFETY: `len < capacity`: the slot at `end` is spare capacity.
        unsafe {
            self.front.end.write(entry);
            self.front.end = self.front.end.add(1);
        }
    }

    /// Makes room for `additional` more entries; the inlined path's room is closed
    /// (the caller opens it again with the new capacity).
    #[cold]
    fn reserve_more(&mut self, additional: usize) {
        let len = self.len();
        // SAFETY: the first `len` slots are initialised entries (invariants); the
        // length is set back to 0 below, before anything else reads the vector.
        unsafe { self.storage.set_len(len) };
        self.storage.reserve(additional);
        // SAFETY: as above: the entries stay in the (new) buffer's first `len` slots.
        unsafe { self.storage.set_len(0) };
        let base = self.storage.as_mut_ptr();
        // SAFETY: `len <= capacity`.
        self.front.end = unsafe { base.add(len) };
        self.front.room = std::ptr::null_mut();
        self.stop = base;
    }

    /// Doubles the buffer (at least 64 entries more), whether full or not. Closes the
    /// set as growing does.
    pub(crate) fn grow(&mut self) {
        self.reserve_more(self.capacity().max(64));
    }

    /// Keeps the first entry of each record and drops the others, in place and in
    /// order; `records` is the number of records (every entry's record is below it).
    /// The room stays where it was (more of it is free now). See the read barrier's
    /// header (`access.rs`) for why the dropped entries are not needed.
    #[cold]
    pub(crate) fn compact(&mut self, records: usize) {
        let mut seen = vec![0u64; records.div_ceil(64)];
        let base = self.storage.as_mut_ptr();
        let len = self.len();
        let mut kept = 0;
        for at in 0..len {
            // SAFETY: `at < len`: an initialised entry (invariants).
            let entry = unsafe { base.add(at).read() };
            let (word, bit) = (entry.orec / 64, 1u64 << (entry.orec % 64));
            if seen[word] & bit == 0 {
                seen[word] |= bit;
                // SAFETY: `kept <= at < len`: inside the initialised entries.
                unsafe { base.add(kept).write(entry) };
                kept += 1;
            }
        }
        // SAFETY: `kept <= len`: the first `kept` entries are initialised.
        self.front.end = unsafe { base.add(kept) };
    }

    /// Ensures the buffer can hold `len() + 1` entries (the full path's growth): when
    /// full, it grows by at least 64 entries, and at least doubles.
    pub(crate) fn reserve_one(&mut self) {
        let len = self.len();
        if len == self.capacity() {
            self.reserve_more(len.max(64));
        }
    }

    /// Places the inlined path's stop at `limit` entries, or at the capacity if
    /// lower; an open room stays where it was until the next [`ReadSet::open`].
    pub(crate) fn set_stop(&mut self, limit: usize) {
        self.stop = self.place(limit);
    }

    /// Where the set would end holding `limit` entries, or its capacity if lower.
    fn place(&mut self, limit: usize) -> *mut ReadEntry {
        let limit = limit.min(self.capacity());
        // SAFETY: `limit <= capacity`: at most one past the buffer's end.
        unsafe { self.storage.as_mut_ptr().add(limit) }
    }

    /// Lets the inlined path append up to the stop ([`ReadSet::set_stop`]; nothing
    /// until the first growth).
    #[inline(always)]
    pub(crate) fn open(&mut self) {
        self.front.room = self.stop;
    }

    /// Lowers the inlined path's stop to `limit` entries if it is higher; a closed
    /// set stays closed.
    pub(crate) fn restrict(&mut self, limit: usize) {
        if self.is_open() {
            self.front.room = self.front.room.min(self.place(limit));
        }
    }

    /// Whether the set is open: [`ReadSet::open`] (or [`ReadSet::restrict`] since)
    /// and not [`ReadSet::close`]d nor grown since, even if it has no room left.
    #[inline(always)]
    pub(crate) fn is_open(&self) -> bool {
        !self.front.room.is_null()
    }

    /// Stops the inlined path from appending.
    #[inline(always)]
    pub(crate) fn close(&mut self) {
        self.front.room = std::ptr::null_mut();
    }

    /// Empties the set (the buffer stays).
    #[inline(always)]
    pub(crate) fn clear(&mut self) {
        self.front.end = self.storage.as_mut_ptr();
    }

    /// Empties the set and gives its buffer back if it grew past `kept` entries. The
    /// set is left closed.
    pub(crate) fn clear_and_shrink(&mut self, kept: usize) {
        self.front.room = std::ptr::null_mut();
        if self.capacity() > kept {
            self.storage = Vec::new();
            self.stop = self.storage.as_mut_ptr();
        }
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inlined path's append: true if it had room.
    fn push_fast(set: &mut ReadSet, entry: ReadEntry) -> bool {
        let Some(slot) = set.fast_slot() else {
            return false;
        };
        // SAFETY: the slot was just taken from this set.
        unsafe { set.fill(slot, entry) };
        true
    }

    fn entry(orec: usize) -> ReadEntry {
        ReadEntry {
            orec,
            version: orec as u64 * 2,
        }
    }

    #[test]
    fn a_closed_set_takes_nothing_on_the_inlined_path() {
        let mut set = ReadSet::default();
        assert!(!push_fast(&mut set, entry(1)));
        set.reserve_one();
        assert!(
            !push_fast(&mut set, entry(1)),
            "growth leaves the set closed"
        );
        assert!(!set.is_open());
        set.open();
        assert!(set.is_open(), "open even before the stop is set");
        assert!(
            !push_fast(&mut set, entry(1)),
            "no room before the stop is set"
        );
        assert_eq!(set.len(), 0);
    }

    #[test]
    fn the_inlined_path_stops_at_its_room_and_the_full_path_grows() {
        let mut set = ReadSet::default();
        set.reserve_one();
        let capacity = set.capacity();
        set.set_stop(3);
        set.open();
        let mut pushed = 0;
        while push_fast(&mut set, entry(pushed)) {
            pushed += 1;
        }
        assert_eq!(pushed, 3.min(capacity));
        for orec in pushed..capacity + 10 {
            set.push(entry(orec));
        }
        assert!(set.capacity() >= capacity + 10);
        let orecs: Vec<usize> = set.as_slice().iter().map(|read| read.orec).collect();
        assert_eq!(orecs, (0..capacity + 10).collect::<Vec<_>>());
        assert!(!set.has_fast_room(), "growth closed the set");
    }

    #[test]
    fn restrict_lowers_an_open_room_and_leaves_a_closed_one() {
        let mut set = ReadSet::default();
        set.reserve_one();
        set.restrict(1);
        assert!(!set.has_fast_room());
        set.set_stop(usize::MAX);
        set.open();
        set.restrict(1);
        assert!(push_fast(&mut set, entry(0)));
        assert!(!push_fast(&mut set, entry(1)));
        set.clear();
        assert!(push_fast(&mut set, entry(2)), "clearing keeps the room");
        assert_eq!(set.as_slice(), &[entry(2)]);
    }

    #[test]
    fn clear_and_shrink_gives_back_a_large_buffer_only() {
        let mut set = ReadSet::default();
        for orec in 0..100 {
            set.push(entry(orec));
        }
        set.clear_and_shrink(1000);
        assert_eq!(set.len(), 0);
        assert!(set.capacity() >= 100);
        for orec in 0..100 {
            set.push(entry(orec));
        }
        set.clear_and_shrink(10);
        assert_eq!((set.len(), set.capacity()), (0, 0));
        set.push(entry(7));
        assert_eq!(set.as_slice(), &[entry(7)]);
    }
}
