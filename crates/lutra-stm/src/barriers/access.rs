//! Transactional reads and writes, conflicts and snapshot validation (time-based, as
//! in TL2 and tinySTM's LSA: a global clock gives every commit a timestamp and every
//! attempt a snapshot `rv`).
//!
//! Every barrier is monomorphised over a [`RecordMapping`]: the access path (a Rust
//! `TVar`, the C ABI) fixes at compile time how many neighbouring words share `a`'s
//! record (`orec.rs`). A write-set entry keeps its record's number, so the commit
//! locks what the barrier mapped.
//!
//! # Protocol: read of the word at `a`, guarded by record `r`
//! 1. A buffered write that covers the whole word answers directly.
//! 2. Load `r` (acquire). Locked by this attempt: memory is stable, load it. Locked by
//!    another: ask the contention manager, then start again.
//! 3. Unlocked at version `v`: load the word, acquire fence, load `r` again; if it
//!    changed, start again (seqlock read).
//! 4. Record `(r, v)`. If `v > rv`, extend the snapshot: read the clock, validate every
//!    recorded read (including this one); on success `rv` becomes that clock value,
//!    otherwise abort with `Validation`. Hence every value returned is consistent
//!    with the snapshot `rv` (opacity), even in an attempt that later aborts.
//!
//! # Read-set compaction
//! In an attempt that is not doomed, every entry of one record holds the same
//! version: a second read of the record at another version either extended the
//! snapshot (and validation of the first entry failed) or would have needed the
//! record's new version to be inside the snapshot, which only an extension after
//! the committer locked it can give (and that extension fails too). So a compaction
//! may keep the first entry of each record and drop the others: validation sees the
//! same verdicts. A full set is compacted once it is large (`COMPACT_FROM`), and
//! always before a capacity abort; an attempt aborts for capacity only when the
//! compacted sets still fill three quarters of the limit, and an irrevocable attempt
//! never does (`fallback.rs`).
//!
//! Conflicts, locking and validation are `conflict.rs`'s.

use crate::attempt::abort::{Abort, AbortReason};
use crate::attempt::descriptor::Core;
use crate::barriers::conflict::Access;
use crate::global::epoch::Release;
use crate::global::orec::{LockWord, RecordMapping};
use crate::global::stm::StmInner;
use crate::global::sync::data::AtomicUsize;
use crate::global::sync::{Ordering, fence};
use crate::sets::read_set::{FastSlot, ReadFront};
use crate::sets::write_set::{ReadEntry, WriteEntry};

/// The index of the word at `addr` (`addr / word size`), or `None` if `addr` is NULL
/// or not a word's address: one rotate, which also gives the index, and one test.
#[inline(always)]
pub(crate) fn checked_word_index(addr: usize) -> Option<usize> {
    const SHIFT: u32 = std::mem::size_of::<usize>().trailing_zeros();
    // A word's address rotates to its index, below 2^61, and only NULL to 0; any
    // other address brings its low bits to the top.
    let rotated = addr.rotate_right(SHIFT);
    (rotated.wrapping_sub(1) >> (usize::BITS - SHIFT) == 0).then_some(rotated)
}

/// The word at `addr`, read by a solo attempt (`solo.rs`): a plain load, since no one
/// else in the engine writes it meanwhile.
///
/// # Safety
/// As [`word`], and a solo attempt of this engine must be running on the caller's
/// thread.
#[inline(always)]
pub(crate) unsafe fn load_alone(addr: usize) -> usize {
    // SAFETY: the caller's contract; alone in the engine, nobody else writes the word.
    unsafe { word(addr) }.load(Ordering::Relaxed)
}

/// The word at `addr`, seen as an atomic.
///
/// # Safety
/// `addr` must be aligned and valid for as long as the returned reference is used.
pub(crate) unsafe fn word<'a>(addr: usize) -> &'a AtomicUsize {
    // SAFETY: the caller guarantees alignment and validity; transactional words are
    // only accessed atomically while transactions may use them.
    unsafe { &*(addr as *const AtomicUsize) }
}

/// The read barrier's inlined dispatch, the one both entries take ([`Core::try_load`],
/// and `TxDescriptor::try_load_through_front` for a caller that holds only a front):
/// the word at `addr` (whose index is `index`) read through the front at `front`,
/// recorded in its read set (an open front with room: [`Core::load_in_slot`]), loaded
/// plainly (a solo attempt's front) or checked against the snapshot and not recorded
/// (a read-only attempt's front: [`Core::load_unrecorded`]), or `None` (nothing done)
/// when the full read must run. The read-only test comes last, where the other cases
/// have already left: a recorded or solo read pays nothing for it.
/// `owner` is asked for the front's core only when the front is open or read-only.
/// `M` maps the word to its record (`orec.rs`).
///
/// # Safety
/// `front` must point to a valid front; `owner` must give the core whose front it is
/// (it is called only for an open front); and if the front is open or plain, `addr`
/// must be as [`TxDescriptor::load`](crate::TxDescriptor::load) requires.
#[inline(always)]
pub(crate) unsafe fn load_through<'a, M: RecordMapping>(
    front: *const ReadFront,
    owner: impl FnOnce() -> &'a mut Core,
    addr: usize,
    index: usize,
) -> Option<usize> {
    // The read set is closed whenever the inlined paths may not run
    // (`Core::fast_access`). SAFETY: a valid front (the contract).
    if let Some(slot) = unsafe { ReadFront::fast_slot_at(front) } {
        owner().load_in_slot::<M>(addr, index, slot)
    // SAFETY: as above.
    } else if unsafe { ReadFront::is_plain_at(front) } {
        // SAFETY: the caller vouched for `addr`; a plain front is a running solo
        // attempt's.
        Some(unsafe { load_alone(addr) })
    // SAFETY: as above.
    } else if unsafe { ReadFront::is_unrecorded_at(front) } {
        owner().load_unrecorded::<M>(addr, index)
    } else {
        None
    }
}

/// The write barrier's inlined dispatch, the one both entries take ([`Core::store`],
/// and `TxDescriptor::try_store_through_front`): the bits of `value` selected by
/// `mask` written to the word at `addr` through the front at `front` — buffered (an
/// open front) or done in memory with the old word logged (a solo attempt's front:
/// [`Core::store_plain`]) — or `false` (nothing done) when the full write must run.
/// A buffered write is guarded by its record under the mapping `M`.
///
/// # Safety
/// As [`load_through`] (`owner` is called only for an open or plain front), and
/// `addr` valid for writes.
#[inline(always)]
pub(crate) unsafe fn store_through<'a, M: RecordMapping>(
    front: *const ReadFront,
    owner: impl FnOnce() -> &'a mut Core,
    addr: usize,
    value: usize,
    mask: usize,
) -> bool {
    // SAFETY: a valid front (the contract).
    let (open, plain) = unsafe { (ReadFront::is_open_at(front), ReadFront::is_plain_at(front)) };
    if !(open || plain) {
        return false;
    }
    let owner = owner();
    if open {
        owner.writes.write::<M>(addr, value, mask)
    } else {
        owner.store_plain(addr, value, mask)
    }
}

/// A full read set of at least this many entries is compacted before it grows: each
/// record keeps one entry, so a transaction that reads the same locations again and
/// again needs no more entries than there are ownership records, and one that reads
/// more words than the engine's set limit fits as long as they map to fewer records.
/// Below it no attempt pays for a compaction; above it a compaction costs a pass
/// over the set and a bitmap of the records, once per doubling.
const COMPACT_FROM: usize = 1 << 16;

impl Core {
    /// The read barrier, with the word's record under the mapping `M`. The straight
    /// case ([`Core::try_load`]) is inlined into the caller; everything else is
    /// [`Core::load_slow`].
    #[inline]
    pub(crate) fn load<M: RecordMapping>(
        &mut self,
        stm: &StmInner,
        addr: usize,
    ) -> Result<usize, Abort> {
        match self.try_load::<M>(addr) {
            Some(value) => Ok(value),
            None => self.load_slow::<M>(stm, addr),
        }
    }

    /// The read barrier's straight case ([`load_through`] of the own front), or `None`
    /// (nothing done) when [`Core::load_slow`] must run.
    #[inline(always)]
    pub(crate) fn try_load<M: RecordMapping>(&mut self, addr: usize) -> Option<usize> {
        let front = &raw const self.reads.front;
        // SAFETY: the own front, owned by this core; the caller of
        // `TxDescriptor::load` vouched for `addr`.
        unsafe { load_through::<M>(front, move || self, addr, addr / size_of::<usize>()) }
    }

    /// The rest of [`Core::try_load`] once the read set had room: `slot` is where the
    /// read is recorded.
    #[inline(always)]
    pub(crate) fn load_in_slot<M: RecordMapping>(
        &mut self,
        addr: usize,
        index: usize,
        slot: FastSlot,
    ) -> Option<usize> {
        if self.writes.may_contain_word(index) {
            return None;
        }
        self.load_unwritten::<M>(addr, index, slot)
    }

    /// The first step of [`Core::load_slow`]: when the inlined read declined only
    /// because the write set's filter has the bit of `addr` (with one write in the
    /// set, one read in 64 does by chance), a write of the whole word answers from
    /// the write set (the attempt's own value: nothing to record), and an address not
    /// written is read as the inlined path reads. `None` for everything else.
    #[inline(always)]
    pub(crate) fn load_past_filter<M: RecordMapping>(&mut self, addr: usize) -> Option<usize> {
        let slot = self.reads.fast_slot()?;
        let index = addr / std::mem::size_of::<usize>();
        if !self.writes.may_contain_word(index) {
            return None;
        }
        match self.writes.get(addr) {
            Some(entry) => (entry.mask == usize::MAX).then_some(entry.value),
            None => self.load_unwritten::<M>(addr, index, slot),
        }
    }

    /// The read of a word the attempt has not written, recorded in `slot`, if its
    /// record is unlocked at a version inside the snapshot and stays so across the
    /// load (else `None`).
    #[inline(always)]
    fn load_unwritten<M: RecordMapping>(
        &mut self,
        addr: usize,
        index: usize,
        slot: FastSlot,
    ) -> Option<usize> {
        let (value, orec, version) = self.load_at_snapshot::<M>(addr, index)?;
        // SAFETY: the slot was taken from the read set, unchanged since.
        unsafe { self.reads.fill(slot, ReadEntry { orec, version }) };
        Some(value)
    }

    /// The seqlock read of the word at `addr` (whose index is `index`): its value,
    /// record and version, if the record is unlocked at a version inside the snapshot
    /// and stays so across the load (else `None`). Records nothing.
    #[inline(always)]
    pub(crate) fn load_at_snapshot<M: RecordMapping>(
        &self,
        addr: usize,
        index: usize,
    ) -> Option<(usize, usize, u64)> {
        let orec = self.orecs.index_of_word::<M>(index);
        // SAFETY: the descriptor holds the engine, so its table is alive.
        let record = unsafe { self.orecs.record(orec) };
        let before = record.load(Ordering::Acquire);
        if LockWord::readable_at(before, self.rv) {
            // SAFETY: the caller of `TxDescriptor::load` vouched for `addr`.
            let value = unsafe { word(addr) }.load(Ordering::Relaxed);
            // ORDERING: as in `load_slow` (the seqlock read of step 3).
            fence(Ordering::Acquire);
            if record.load(Ordering::Relaxed) == before {
                // An unlocked word is its version.
                return Some((value, orec, before as u64));
            }
        }
        None
    }

    /// The read protocol in full (see the module header), for every case the inlined
    /// [`Core::load`] leaves.
    #[cold]
    #[inline(never)]
    pub(crate) fn load_slow<M: RecordMapping>(
        &mut self,
        stm: &StmInner,
        addr: usize,
    ) -> Result<usize, Abort> {
        if let Some(value) = self.load_past_filter::<M>(addr) {
            return Ok(value);
        }
        if self.mode().is_unrecorded() {
            return self.load_unrecorded_slow::<M>(stm, addr);
        }
        self.check_usable(stm)?;
        let buffered = self.writes.get(addr).copied();
        if let Some(entry) = buffered
            && entry.mask == usize::MAX
        {
            return Ok(entry.value);
        }
        let merge = |memory: usize| buffered.map_or(memory, |entry| entry.merged_with(memory));
        let orec = stm.orecs.index_of::<M>(addr);
        let record = stm.orecs.record(orec);
        loop {
            let before = record.load(Ordering::Acquire);
            match LockWord::decode(before) {
                LockWord::Locked { owner } if owner == self.slot => {
                    // SAFETY: the caller of `TxDescriptor::load` vouched for `addr`; we
                    // own its record, so no one else writes it now.
                    return Ok(merge(unsafe { word(addr) }.load(Ordering::Relaxed)));
                }
                LockWord::Locked { owner } => {
                    self.resolve_conflict(stm, owner, orec, Access::Read)?
                }
                LockWord::Unlocked { version } => {
                    // SAFETY: as above.
                    let value = unsafe { word(addr) }.load(Ordering::Relaxed);
                    // ORDERING: pairs with the release fence before write-back in
                    // `commit.rs`: if the value came from a newer commit, the second
                    // load of the record sees that commit's lock or version.
                    fence(Ordering::Acquire);
                    if record.load(Ordering::Relaxed) != before {
                        continue;
                    }
                    self.record_read(stm, orec, version)?;
                    return Ok(merge(value));
                }
            }
        }
    }

    fn record_read(&mut self, stm: &StmInner, orec: usize, version: u64) -> Result<(), Abort> {
        if !self.reads.has_fast_room() {
            self.make_read_room(stm)?;
        }
        self.reads.push(ReadEntry { orec, version });
        if version > self.rv {
            self.extend(stm)?;
        }
        Ok(())
    }

    /// The read set is full (its capacity, or the limit of the attempt's sets):
    /// compacts it when that may pay (see [`COMPACT_FROM`]), checks the limit,
    /// publishes the size for contention managers, and grows the set unless the
    /// compaction freed at least half of it.
    #[cold]
    fn make_read_room(&mut self, stm: &StmInner) -> Result<(), Abort> {
        // A read set grown past `READ_SET_KEPT` is given back at the attempt's end.
        self.mark_not_straight();
        let limit = self.set_limit(stm);
        let len = self.reads.len();
        let at_limit = len + self.writes.len() >= limit;
        let full = len == self.reads.capacity();
        let compacted = at_limit || (full && len >= COMPACT_FROM);
        if compacted {
            self.reads.compact(stm.orecs.len());
        }
        // At the limit, a compaction must leave a quarter of it free: one that
        // freed only a few entries would run again a few reads later.
        if at_limit && self.reads.len() + self.writes.len() > limit - limit / 4 {
            return Err(self.doom(AbortReason::Capacity));
        }
        self.publish_size(stm)?;
        let open = self.fast_access();
        // Growing closes the set; a set that was open opens again at its new stop.
        if !compacted {
            self.reads.reserve_one();
        } else if self.reads.len() * 2 > self.reads.capacity() {
            self.reads.grow();
        }
        self.reads.set_stop(limit);
        if open {
            self.reads.open();
        }
        Ok(())
    }

    /// Tells contention managers how large this attempt is (read set plus write set):
    /// done when the read set grows, when a new buffered write takes the full path
    /// ([`Core::store_slow`]: under commit-time locking, each time the write set's
    /// length passes the room granted), and before a conflict is settled, so a
    /// published size lags the truth by at most a factor of two (the write set's share
    /// once it is past its first `fast_write_room` entries and the room the
    /// descriptor's last large attempt was granted). Fails when the sets outgrew the
    /// engine's limit.
    pub(crate) fn publish_size(&mut self, stm: &StmInner) -> Result<(), Abort> {
        let size = self.reads.len() + self.writes.len();
        if size > self.set_limit(stm) {
            return Err(self.doom(AbortReason::Capacity));
        }
        stm.registry
            .get(self.slot)
            .size
            .store(size, Ordering::Relaxed);
        Ok(())
    }

    /// The write barrier, with the word's record under the mapping `M`. The straight case ([`store_through`] of the own front: a
    /// write buffered under commit-time locking, or a solo attempt's write done) is
    /// inlined; everything else is [`Core::store_slow`]. Always inlined: at its
    /// callers the mask is often a constant and the address known to be aligned,
    /// which folds the merging and the hashing down (the C ABI's `stm_store` saves
    /// a call and 15 instructions).
    #[inline(always)]
    pub(crate) fn store<M: RecordMapping>(
        &mut self,
        stm: &StmInner,
        addr: usize,
        value: usize,
        mask: usize,
        retire_old: Option<Release>,
    ) -> Result<(), Abort> {
        if retire_old.is_none() {
            let front = &raw const self.reads.front;
            let this = &mut *self;
            // SAFETY: the own front, owned by this core; the caller of
            // `TxDescriptor::store` vouched for `addr`.
            if unsafe { store_through::<M>(front, move || this, addr, value, mask) } {
                return Ok(());
            }
        }
        self.store_slow::<M>(stm, addr, value, mask, retire_old)
    }

    /// A solo attempt's write of the bits of `value` selected by `mask` to the word at
    /// `addr`, not doomed, while its undo window has room (inlined): the old word
    /// logged, the new one in memory. False (nothing done) when the window is full.
    #[inline(always)]
    pub(crate) fn store_plain(&mut self, addr: usize, value: usize, mask: usize) -> bool {
        debug_assert!(self.mode().is_plain() && self.doomed.is_none());
        if self.solo_undo.is_full() {
            return false;
        }
        // SAFETY: the caller of `TxDescriptor::store` vouched for `addr`; alone in the
        // engine, nobody else reads or writes the word meanwhile.
        let word = unsafe { word(addr) };
        let old = word.load(Ordering::Relaxed);
        self.solo_undo.push_within(addr, old);
        word.store((old & !mask) | (value & mask), Ordering::Relaxed);
        true
    }

    /// The write protocol in full. A first write buffered here, under commit-time
    /// locking, also grants the inlined path room up to the next power of two of the
    /// write set's length (at least `fast_write_room` and the room the descriptor's
    /// last large attempt was granted, `WriteSet::room_hint`; at most the engine's
    /// set limit), after shrinking the read set's room so that the two sets together
    /// stay within that limit; so the inlined path comes here, and publishes the
    /// attempt's size, each time the write set's length passes the room granted.
    #[cold]
    #[inline(never)]
    fn store_slow<M: RecordMapping>(
        &mut self,
        stm: &StmInner,
        addr: usize,
        value: usize,
        mask: usize,
        retire_old: Option<Release>,
    ) -> Result<(), Abort> {
        if self.mode().is_solo_or_unrecorded() {
            return self.store_solo(addr, value, mask, retire_old);
        }
        let probed = self.fast_access() && retire_old.is_none();
        if probed && self.writes.write_probing::<M>(addr, value, mask) {
            // The inlined path's write, past a home slot that another address holds.
            return Ok(());
        }
        self.check_usable(stm)?;
        // A write that probed found no entry for `addr` (it would have merged).
        if !probed && self.writes.update(addr, value, mask) {
            return Ok(());
        }
        if retire_old.is_some() {
            // The commit must retire the value this write replaces.
            self.mark_not_straight();
        }
        let entry = WriteEntry::new::<M>(addr, value, mask, retire_old);
        stm.before_first_write(self, stm.orecs.index_of_record(entry.record))?;
        self.writes.insert(entry);
        let limit = self.set_limit(stm);
        let len = self.writes.len();
        let mut room = len;
        if stm.fast_write_room > 0 && self.fast_access() && stm.locks_at_commit() {
            room = (len + 1)
                .next_power_of_two()
                .max(stm.fast_write_room)
                .max(self.writes.room_hint())
                .min(limit)
                .max(len);
            self.writes.allow(room);
        }
        self.reads.restrict(limit.saturating_sub(room));
        self.publish_size(stm)
    }

    /// A write of a solo attempt (`solo.rs`): straight to memory, the old word logged.
    /// Out of line, so that its growth path does not cost [`Core::store`]'s inlined
    /// path a register save. A read-only attempt's write comes here too, and dooms it
    /// (`read_only.rs`).
    #[inline(never)]
    fn store_solo(
        &mut self,
        addr: usize,
        value: usize,
        mask: usize,
        retire_old: Option<Release>,
    ) -> Result<(), Abort> {
        if let Some(reason) = self.doomed {
            return Err(Abort::new(reason));
        }
        if let Some(abort) = self.refuse_if_read_only() {
            return Err(abort);
        }
        if retire_old.is_some() {
            return Err(self.doom(AbortReason::Misuse));
        }
        if self.store_plain(addr, value, mask) {
            return Ok(());
        }
        self.store_solo_growing(addr, value, mask)
    }

    /// The end of [`Core::store_solo`] when the undo window is full: grows it, then
    /// logs and writes. Apart, and reached by a tail call, so that the common path
    /// saves no register.
    #[cold]
    #[inline(never)]
    fn store_solo_growing(&mut self, addr: usize, value: usize, mask: usize) -> Result<(), Abort> {
        // The log grows and may outgrow what a straight end keeps.
        self.mark_not_straight();
        // SAFETY: as in `store_plain`.
        let word = unsafe { word(addr) };
        let old = word.load(Ordering::Relaxed);
        self.solo_undo.push(addr, old);
        word.store((old & !mask) | (value & mask), Ordering::Relaxed);
        Ok(())
    }
}
