//! What a running attempt does through its descriptor: reads and writes (also
//! through a read front, for a caller that holds only that), allocation and frees,
//! irrevocability, doom, waiting, commit and rollback. Each forwards to the `Core`
//! function that holds the protocol (`access.rs`, `commit.rs`, `irrevocable.rs`…).

use crate::attempt::abort::{Abort, AbortReason};
use crate::attempt::descriptor::TxDescriptor;
use crate::attempt::mode::{Escalation, Mode};
use crate::barriers::access::{checked_word_index, load_through, store_through};
use crate::global::epoch::Release;
use crate::global::orec::{PerWord, RecordMapping};
use crate::global::waiting::Watched;
use crate::sets::read_set::ReadFront;
use crate::sets::write_set::Block;
use std::ptr::NonNull;

/// The reads and writes below come in two forms: `load`, `store`… map a word to its
/// ownership record with one record per word ([`PerWord`]), what Rust callers want
/// (neighbouring `TVar`s never conflict); `load_mapped::<M>`, `store_mapped::<M>`…
/// take the mapping as a type, for the C ABI's granules
/// ([`PerGranule`](crate::PerGranule)). Every access to one word must use the same
/// mapping (see [`RecordMapping`]).
impl TxDescriptor {
    /// Reads the word at `addr` in the running attempt, one record per word
    /// ([`TxDescriptor::load_mapped`] with [`PerWord`]).
    ///
    /// # Errors
    /// The abort that dooms the attempt (it stays doomed: commit will fail too), or
    /// [`AbortReason::Misuse`] when no attempt is active.
    ///
    /// # Safety
    /// `addr` must be aligned and valid for reads for as long as any transaction may
    /// access it, and must only be written by transactions of this engine while
    /// transactions may access it; and every transaction must access it with one
    /// record per word (these entries, or the `_mapped` ones with [`PerWord`]), never
    /// through the C ABI's granules.
    #[inline]
    pub unsafe fn load(&mut self, addr: *const usize) -> Result<usize, Abort> {
        // SAFETY: the caller's contract.
        unsafe { self.load_mapped::<PerWord>(addr) }
    }

    /// [`TxDescriptor::load`], the word guarded by its record under the mapping `M`.
    ///
    /// # Errors
    /// As [`TxDescriptor::load`].
    ///
    /// # Safety
    /// As [`TxDescriptor::load`], and every access to the word (by any transaction)
    /// must use the mapping `M`.
    #[inline]
    pub unsafe fn load_mapped<M: RecordMapping>(
        &mut self,
        addr: *const usize,
    ) -> Result<usize, Abort> {
        self.core.load::<M>(&self.stm, addr as usize)
    }

    /// The straight case of [`TxDescriptor::load`], inlined into the caller: the word
    /// at `addr`, or `None` when the full [`TxDescriptor::load`] must run (it has
    /// done nothing then). For a caller that keeps its own slow path out of line.
    ///
    /// # Safety
    /// As [`TxDescriptor::load`].
    #[inline(always)]
    pub unsafe fn try_load(&mut self, addr: *const usize) -> Option<usize> {
        self.core.try_load::<PerWord>(addr as usize)
    }

    /// Where a descriptor's read front lies in it (see
    /// [`TxDescriptor::try_load_through_front`]).
    pub const READ_FRONT_OFFSET: usize = std::mem::offset_of!(TxDescriptor, core.reads.front);

    /// [`TxDescriptor::try_load`], for an address of any value (`None`, nothing done,
    /// also when `addr` is NULL or not aligned to a word), by a caller that keeps a
    /// pointer to the descriptor's read front (its address plus [`TxDescriptor::READ_FRONT_OFFSET`])
    /// or, when it has no descriptor, to a closed front: the read tests the front
    /// first, and reaches the descriptor only when the front lets it, so a caller
    /// without a descriptor pays no test of its own. `None` (nothing done) when the
    /// full [`TxDescriptor::load`] must run, or when `front` is closed.
    ///
    /// ```
    /// use lutra_stm::{ReadFront, Stm, TxDescriptor, TxOptions};
    /// use std::ptr::NonNull;
    /// let stm = Stm::default();
    /// let word: usize = 5;
    /// let mut closed = ReadFront::CLOSED;
    /// // SAFETY: a closed front; `word` is an aligned word.
    /// assert_eq!(unsafe { TxDescriptor::try_load_through_front(NonNull::from(&mut closed), &word) }, None);
    /// let mut tx = TxDescriptor::new(&stm).unwrap();
    /// tx.begin(TxOptions::default());
    /// let front = tx.read_front();
    /// // SAFETY: the descriptor's own front, and nothing else uses it meanwhile.
    /// let first = unsafe { TxDescriptor::try_load_through_front(front, &word) };
    /// assert!(first.is_none() || first == Some(5));
    /// tx.commit().unwrap();
    /// ```
    ///
    /// # Safety
    /// `front` must point to a closed front that no one writes, or to the read front
    /// of a live descriptor, derived from a pointer to the whole descriptor (as
    /// [`TxDescriptor::read_front`] gives) and not borrowed elsewhere during the
    /// call; and `addr`, if aligned and not NULL, as for [`TxDescriptor::load`].
    #[inline(always)]
    pub unsafe fn try_load_through_front(
        front: NonNull<ReadFront>,
        addr: *const usize,
    ) -> Option<usize> {
        // SAFETY: the caller's contract.
        unsafe { Self::try_load_through_front_mapped::<PerWord>(front, addr) }
    }

    /// [`TxDescriptor::try_load_through_front`] under the mapping `M`.
    ///
    /// # Safety
    /// As [`TxDescriptor::try_load_through_front`], and as [`TxDescriptor::load_mapped`].
    #[inline(always)]
    pub unsafe fn try_load_through_front_mapped<M: RecordMapping>(
        front: NonNull<ReadFront>,
        addr: *const usize,
    ) -> Option<usize> {
        let index = checked_word_index(addr as usize)?;
        let front = front.as_ptr();
        // SAFETY: `front` points to a valid front (the contract), read without a
        // reference, so a closed one shared by threads is only read; an open front's
        // owner is the descriptor it lies in (the contract); `addr` is a word's
        // address (checked), valid by the contract.
        unsafe {
            load_through::<M>(
                front,
                || &mut Self::owner_of_front(front).core,
                addr as usize,
                index,
            )
        }
    }

    /// The write of the whole word at `addr` through a read front, as
    /// [`TxDescriptor::try_load_through_front`] reads: the straight case of
    /// [`TxDescriptor::store`] (a write buffered, or a solo attempt's write logged
    /// and done), or false (nothing done) when the full [`TxDescriptor::store`] must
    /// run, and also when `front` is closed or `addr` is NULL or not aligned.
    ///
    /// # Safety
    /// As [`TxDescriptor::try_load_through_front`], and `addr` must be valid for
    /// writes if it is aligned and not NULL.
    #[inline(always)]
    pub unsafe fn try_store_through_front(
        front: NonNull<ReadFront>,
        addr: *mut usize,
        value: usize,
    ) -> bool {
        // SAFETY: the caller's contract.
        unsafe { Self::try_store_through_front_mapped::<PerWord>(front, addr, value) }
    }

    /// [`TxDescriptor::try_store_through_front`] under the mapping `M`.
    ///
    /// # Safety
    /// As [`TxDescriptor::try_store_through_front`], and as
    /// [`TxDescriptor::load_mapped`].
    #[inline(always)]
    pub unsafe fn try_store_through_front_mapped<M: RecordMapping>(
        front: NonNull<ReadFront>,
        addr: *mut usize,
        value: usize,
    ) -> bool {
        if checked_word_index(addr as usize).is_none() {
            return false;
        }
        let front = front.as_ptr();
        // SAFETY: as in `try_load_through_front`; an open or plain front's owner is
        // the descriptor it lies in.
        unsafe {
            store_through::<M>(
                front,
                || &mut Self::owner_of_front(front).core,
                addr as usize,
                value,
                usize::MAX,
            )
        }
    }

    /// The descriptor whose read front is at `front`.
    ///
    /// # Safety
    /// `front` must be the front of a live descriptor (an open or plain one always
    /// is), derived from a pointer to the whole descriptor, which lies
    /// `READ_FRONT_OFFSET` bytes before it, and not borrowed elsewhere while the
    /// returned reference is used.
    #[inline(always)]
    unsafe fn owner_of_front<'a>(front: *mut ReadFront) -> &'a mut TxDescriptor {
        // SAFETY: the caller's contract.
        unsafe {
            &mut *front
                .byte_sub(Self::READ_FRONT_OFFSET)
                .cast::<TxDescriptor>()
        }
    }

    /// This descriptor's read front, for [`TxDescriptor::try_load_through_front`].
    /// It stays in place as long as the descriptor does (it is not moved).
    pub fn read_front(&mut self) -> NonNull<ReadFront> {
        let whole: *mut TxDescriptor = self;
        // SAFETY: the front lies inside the descriptor, `READ_FRONT_OFFSET` bytes in.
        unsafe { NonNull::new_unchecked(whole.byte_add(Self::READ_FRONT_OFFSET).cast()) }
    }

    /// [`TxDescriptor::load`] without its inlined straight case: for a caller whose own
    /// [`TxDescriptor::try_load`] (or a read through the front) just returned `None`.
    ///
    /// # Errors
    /// As [`TxDescriptor::load`].
    ///
    /// # Safety
    /// As [`TxDescriptor::load`].
    pub unsafe fn load_uninlined(&mut self, addr: *const usize) -> Result<usize, Abort> {
        // SAFETY: the caller's contract.
        unsafe { self.load_uninlined_mapped::<PerWord>(addr) }
    }

    /// [`TxDescriptor::load_uninlined`] under the mapping `M`.
    ///
    /// # Errors
    /// As [`TxDescriptor::load`].
    ///
    /// # Safety
    /// As [`TxDescriptor::load_mapped`].
    pub unsafe fn load_uninlined_mapped<M: RecordMapping>(
        &mut self,
        addr: *const usize,
    ) -> Result<usize, Abort> {
        self.core.load_slow::<M>(&self.stm, addr as usize)
    }

    /// The read of a word whose bit the write set's one-word filter has, inlined: when
    /// the inlined read declined only for that bit (in an attempt that wrote more
    /// words than the filter tells apart, most reads do), the attempt's own value of a
    /// word it wrote whole, or, for a word it did not write, the word read and
    /// recorded as the inlined read does. `None`, having done nothing, for everything
    /// else (a closed front, a word written in part, a record locked or newer than the
    /// snapshot): call [`TxDescriptor::load_uninlined`] then, which begins with the
    /// same steps. For a caller whose [`TxDescriptor::try_load`] (or a read through the
    /// front) just returned `None`, so that the common case of its fallback needs no
    /// call: the C ABI's `stm_load`.
    ///
    /// # Safety
    /// As [`TxDescriptor::load`].
    #[inline(always)]
    pub unsafe fn try_load_past_filter(&mut self, addr: *const usize) -> Option<usize> {
        // SAFETY: the caller's contract.
        unsafe { self.try_load_past_filter_mapped::<PerWord>(addr) }
    }

    /// [`TxDescriptor::try_load_past_filter`] under the mapping `M`.
    ///
    /// # Safety
    /// As [`TxDescriptor::load_mapped`].
    #[inline(always)]
    pub unsafe fn try_load_past_filter_mapped<M: RecordMapping>(
        &mut self,
        addr: *const usize,
    ) -> Option<usize> {
        self.core.load_past_filter::<M>(addr as usize)
    }

    /// Buffers a write of the bits of `value` selected by `mask` to the word at `addr`
    /// (`usize::MAX` writes the whole word).
    ///
    /// # Errors
    /// As [`TxDescriptor::load`].
    ///
    /// # Safety
    /// As [`TxDescriptor::load`], and `addr` must be valid for writes.
    #[inline]
    pub unsafe fn store(
        &mut self,
        addr: *mut usize,
        value: usize,
        mask: usize,
    ) -> Result<(), Abort> {
        // SAFETY: the caller's contract.
        unsafe { self.store_mapped::<PerWord>(addr, value, mask) }
    }

    /// [`TxDescriptor::store`], the word guarded by its record under the mapping `M`.
    ///
    /// # Errors
    /// As [`TxDescriptor::load`].
    ///
    /// # Safety
    /// As [`TxDescriptor::store`] and [`TxDescriptor::load_mapped`].
    #[inline]
    pub unsafe fn store_mapped<M: RecordMapping>(
        &mut self,
        addr: *mut usize,
        value: usize,
        mask: usize,
    ) -> Result<(), Abort> {
        self.core
            .store::<M>(&self.stm, addr as usize, value, mask, None)
    }

    /// Buffers a write that replaces a boxed value: once committed, the replaced word
    /// is handed to `retire_old` after no transaction can read it any more.
    pub(crate) fn store_replacing(
        &mut self,
        addr: usize,
        value: usize,
        retire_old: Release,
    ) -> Result<(), Abort> {
        self.core
            .store::<PerWord>(&self.stm, addr, value, usize::MAX, Some(retire_old))
    }

    /// Records memory allocated by the running attempt: it is handed to `release` if
    /// the attempt aborts.
    #[inline]
    pub fn record_allocation(&mut self, addr: usize, size: usize, release: Release) {
        self.core.record_allocation(addr, size, release, false);
    }

    pub(crate) fn record_tvar_value(&mut self, addr: usize, release: Release) {
        self.core.record_allocation(addr, 0, release, true);
    }

    /// Frees `size` bytes at `addr` if the running attempt commits, once no
    /// transaction can still read them; the words are written (unchanged) so that
    /// concurrent transactions using them conflict with this one
    /// ([`TxDescriptor::write_unchanged`]).
    ///
    /// # Errors
    /// As [`TxDescriptor::load`].
    ///
    /// # Safety
    /// The block must be owned by the program, valid for `size` bytes, word-aligned,
    /// freed only once, and `release` must be the way to free it.
    #[inline]
    pub unsafe fn free_on_commit(
        &mut self,
        addr: usize,
        size: usize,
        release: Release,
    ) -> Result<(), Abort> {
        // SAFETY: the block is valid for `size` bytes and word-aligned (contract).
        unsafe { self.write_unchanged(addr, size)? };
        self.core.note_free();
        self.core.frees.push(Block {
            addr,
            size,
            release,
            tvar_value: false,
        });
        Ok(())
    }

    /// Writes every word of the `size` bytes at `addr` unchanged (mask 0), so that
    /// concurrent transactions using them conflict with the running attempt: what
    /// freeing them does. A solo attempt writes nothing: no transaction runs beside
    /// it to conflict with.
    ///
    /// # Errors
    /// As [`TxDescriptor::load`].
    ///
    /// # Safety
    /// `addr` must be word-aligned, and the `size` bytes from it (rounded up to whole
    /// words) valid for reads and writes, as for [`TxDescriptor::store`].
    #[inline]
    pub unsafe fn write_unchanged(&mut self, addr: usize, size: usize) -> Result<(), Abort> {
        // SAFETY: the caller's contract.
        unsafe { self.write_unchanged_mapped::<PerWord>(addr, size) }
    }

    /// [`TxDescriptor::write_unchanged`] under the mapping `M`.
    ///
    /// # Errors
    /// As [`TxDescriptor::load`].
    ///
    /// # Safety
    /// As [`TxDescriptor::write_unchanged`] and [`TxDescriptor::load_mapped`].
    #[inline]
    pub unsafe fn write_unchanged_mapped<M: RecordMapping>(
        &mut self,
        addr: usize,
        size: usize,
    ) -> Result<(), Abort> {
        if size == 0 || self.core.mode().is_solo() {
            return Ok(());
        }
        self.write_unchanged_words::<M>(addr, size)
    }

    /// The writes of [`TxDescriptor::write_unchanged`], apart from its callers.
    #[inline(never)]
    fn write_unchanged_words<M: RecordMapping>(
        &mut self,
        addr: usize,
        size: usize,
    ) -> Result<(), Abort> {
        let word = std::mem::size_of::<usize>();
        for at in (addr..addr + size.div_ceil(word) * word).step_by(word) {
            self.core.store::<M>(&self.stm, at, 0, 0, None)?;
        }
        Ok(())
    }

    /// Makes the running attempt irrevocable: it will not abort, and other updating
    /// transactions cannot commit until it ends.
    ///
    /// # Errors
    /// The attempt is doomed (with [`AbortReason::Irrevocable`] when something it read
    /// has changed: its next attempt then starts irrevocable), or not active.
    pub fn become_irrevocable(&mut self) -> Result<(), Abort> {
        self.core.become_irrevocable(&self.stm)
    }

    /// Makes the running attempt serial: irrevocable, and the only attempt of the
    /// engine that runs until it ends — every other attempt is killed or has ended,
    /// and none begins meanwhile. Code that writes shared memory without the engine
    /// (GCC's uninstrumented code, an unsafe call in `__transaction_relaxed`) may then
    /// run inside it. See `serial.rs`.
    ///
    /// # Errors
    /// As [`TxDescriptor::become_irrevocable`]: the attempt is doomed (its next
    /// attempt starts irrevocable, and may ask again), or not active.
    #[inline]
    pub fn become_serial(&mut self) -> Result<(), Abort> {
        if self.core.try_become_serial_straight() {
            return Ok(());
        }
        self.core.become_serial(&self.stm)
    }

    /// Whether the running attempt is serial ([`TxDescriptor::become_serial`]).
    pub fn is_serial(&self) -> bool {
        matches!(
            self.core.mode(),
            Mode::Serial | Mode::SoloIrrevocable | Mode::SoloSerialStraight
        )
    }

    /// Dooms the running attempt with `reason` (an explicit abort, a retry). A
    /// `retry` of a read-only attempt, which has no read set to wait on, dooms it with
    /// [`AbortReason::NotReadOnly`] instead: the transaction runs again recorded, and
    /// retries then.
    pub fn doom(&mut self, reason: AbortReason) -> Abort {
        if reason == AbortReason::Retry
            && let Some(abort) = self.core.refuse_if_read_only()
        {
            return abort;
        }
        self.core.doom(reason)
    }

    /// Dooms the running attempt with [`AbortReason::Irrevocable`] and makes the next
    /// attempt of this transaction start irrevocable: a restart that runs the
    /// transaction again alone among updaters (a cooperative lock reverting to
    /// exclusion, seed 003). Returns the abort, to be returned with `?`. An attempt
    /// that is already doomed keeps its first reason and still restarts irrevocable.
    pub fn restart_irrevocable(&mut self) -> Abort {
        self.core.escalation = Escalation::Irrevocable;
        self.core.doom(AbortReason::Irrevocable)
    }

    /// Waits inside the running attempt, without accessing memory transactionally,
    /// until `done` holds: spins, then yields through the engine's parking, as the
    /// engine's own waits do. Code that polls a non-transactional word (a cooperative
    /// lock held exclusively) uses it, so the word never enters the read set.
    ///
    /// # Errors
    /// The abort that dooms the attempt, noticed while waiting (another transaction
    /// killed it to take a location it holds; waiting on would deadlock), or
    /// [`AbortReason::Misuse`] when no attempt is active.
    pub fn wait_until(&mut self, mut done: impl FnMut() -> bool) -> Result<(), Abort> {
        let (stm, core) = (&*self.stm, &mut self.core);
        core.check_usable(stm)?;
        stm.try_wait_until(|| {
            if done() {
                return Ok(true);
            }
            core.check_usable(stm).map(|()| false)
        })
    }

    /// Commits the running attempt.
    ///
    /// # Errors
    /// The abort that prevented the commit; the attempt has then been rolled back.
    #[inline]
    pub fn commit(&mut self) -> Result<(), Abort> {
        let result = self.core.commit(&self.stm);
        if result.is_ok() && self.stm.hooks_active {
            self.report_commit();
        }
        result
    }

    #[cold]
    fn report_commit(&self) {
        self.stm.config.hooks.on_commit(&self.event(None));
    }

    /// Rolls the running attempt back (no effect if none is active): releases its locks
    /// and the memory it allocated, forgets its writes.
    pub fn rollback(&mut self, reason: AbortReason) {
        self.core.rollback(&self.stm, reason);
    }

    /// For a transaction that called `retry`: rolls the attempt back and blocks through
    /// the engine's parking until a location it read is changed by a commit.
    ///
    /// # Errors
    /// [`AbortReason::Misuse`] if the attempt read nothing (nothing could ever wake it)
    /// or is irrevocable; the attempt is rolled back either way.
    pub fn wait_for_change(&mut self) -> Result<(), Abort> {
        let watched = self.roll_back_for_retry()?;
        self.stm
            .waits
            .wait(&self.stm.orecs, &watched, &*self.stm.config.parking);
        Ok(())
    }

    /// `retry`'s first half, shared by [`TxDescriptor::wait_for_change`] and
    /// [`TxDescriptor::watch_for_change`]: the records read (with the versions seen),
    /// taken before the attempt is rolled back.
    ///
    /// # Errors
    /// [`AbortReason::Misuse`] if the attempt read nothing or the program made it
    /// irrevocable (rolled back all the same).
    pub(crate) fn roll_back_for_retry(&mut self) -> Result<Vec<Watched>, Abort> {
        let watched: Vec<Watched> = self
            .core
            .reads
            .as_slice()
            .iter()
            .map(|r| Watched {
                orec: r.orec,
                version: r.version,
            })
            .collect();
        let may_retry = self.may_retry();
        self.core.rollback(&self.stm, AbortReason::Retry);
        if watched.is_empty() || !may_retry {
            return Err(Abort::new(AbortReason::Misuse));
        }
        Ok(watched)
    }

    /// Runs `body` with a checkpoint of the write set: if it returns a `Retry` abort,
    /// its writes and allocations are undone and `None` is returned; otherwise its
    /// result.
    pub(crate) fn with_checkpoint<T>(
        &mut self,
        body: impl FnOnce(&mut Self) -> Result<T, Abort>,
    ) -> Option<Result<T, Abort>> {
        let checkpoint = self.core.writes.checkpoint(self.core.allocations.len());
        let allocations = self.core.allocations.len();
        let frees = self.core.frees.len();
        let result = body(self);
        if matches!(&result, Err(abort) if abort.reason() == AbortReason::Retry)
            && self.core.doomed == Some(AbortReason::Retry)
        {
            self.core.writes.roll_back_to(checkpoint);
            for block in self.core.allocations.drain(allocations..) {
                // SAFETY: allocated by this attempt inside the branch being undone;
                // nothing committed can refer to it.
                unsafe { (block.release)(block.addr, block.size) };
            }
            self.core.frees.truncate(frees);
            self.core.doomed = None;
            None
        } else {
            self.core.writes.keep(checkpoint);
            Some(result)
        }
    }
}
