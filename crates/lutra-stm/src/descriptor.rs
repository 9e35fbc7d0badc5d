//! Transaction descriptors: the state of one transaction and its lifecycle.
//!
//! A [`TxDescriptor`] belongs to a thread or a task (never to both at once; it can move
//! between threads between attempts). It runs one attempt at a time:
//! `begin` → loads and stores → `commit`, or `rollback`; `restart` begins the next
//! attempt of the same transaction, keeping its age and priority. `prepare` announces
//! a transaction's options before its first start hook is asked.
//!
//! Hooks (see `hooks.rs`): `begin` asks `start_priority`; `finish`, which every
//! attempt's end goes through (commit, rollback, `retry`, panic, drop), calls
//! `on_attempt_end` once.
//!
//! The access protocols (reads, writes, conflicts, validation) are in `access.rs`; the
//! commit and rollback in `commit.rs`; becoming irrevocable in `irrevocable.rs`.
//!
//! # Invariants
//! - While an attempt is active, the own status word is `Active` (or `Killed` by
//!   another transaction, or `Committing` inside `commit`) with this attempt's serial,
//!   and the own epoch is announced.
//! - Outside attempts, the descriptor holds no lock, no gate, no epoch announcement.
//! - Every entry of the read set records a version no newer than the snapshot `rv`.

use crate::abort::{Abort, AbortReason};
use crate::access::{checked_word_index, load_through, store_through};
use crate::epoch::{Release, Retired};
use crate::hooks::{Decision, TxEvent};
use crate::mode::{Escalation, Mode};
use crate::orec::OrecView;
use crate::read_set::{ReadFront, ReadSet};
use crate::registry::{SharedDescriptor, Status};
use crate::sets::{Block, LockSet, WordMap, WriteSet};
use crate::stats::{Counters, Outcome};
use crate::stm::{Stm, StmInner};
use crate::sync::Ordering;
use crate::ticks::Stamp;
use crate::undo_log::{UndoLog, UndoWindow};
use crate::waiting::Watched;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;

/// Read sets that grew past this capacity are given back when the attempt ends, so
/// one huge transaction does not keep its memory for the life of the descriptor.
const READ_SET_KEPT: usize = 1 << 16;

/// How a transaction runs: its statistics site, its contention priority, and whether
/// it starts irrevocable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxOptions {
    /// The transaction site: an id the caller chooses (for example one per code
    /// location), used to group statistics and by scheduling policies.
    pub site: u32,
    /// Contention priority for the [`Priority`](crate::cm::Priority) manager; higher
    /// wins. Fixed for all attempts of the transaction.
    pub priority: i64,
    /// Start irrevocable: the transaction will not abort (at most one at a time).
    pub irrevocable: bool,
}

impl TxOptions {
    /// Options with this site.
    pub fn site(site: u32) -> Self {
        Self {
            site,
            ..Self::default()
        }
    }
}

/// More descriptors are alive than [`Config::max_descriptors`](crate::Config) allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegistryFull;

impl fmt::Display for RegistryFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("too many transaction descriptors alive (raise Config::max_descriptors)")
    }
}

impl std::error::Error for RegistryFull {}

/// The per-attempt state, separate from the engine so both can be borrowed at once.
///
/// Its attempt's mode (`mode.rs`) lives in the read front, `reads.front.mode`
/// ([`Core::mode`]), where the inlined read through a front finds it.
pub(crate) struct Core {
    pub(crate) slot: usize,
    /// This descriptor's registry slot (`stm.registry.get(slot)`), kept so the hot
    /// paths skip the lookup. Valid while the descriptor lives: it holds the engine.
    shared: NonNull<SharedDescriptor>,
    /// Own status word as last set by this descriptor.
    pub(crate) status: Status,
    /// Snapshot timestamp: every read is consistent with the memory at `rv`.
    pub(crate) rv: u64,
    /// The records read. The set is *open* ([`Core::fast_access`]) while the inlined
    /// access paths may run: an attempt is active, not doomed, and holds no lock (so
    /// no kill can reach it: see `check_usable`). Opened when an attempt becomes
    /// active; closed by `doom`, by the first lock taken and at the attempt's end.
    /// Its front also holds the attempt's mode ([`Core::mode`]).
    pub(crate) reads: ReadSet,
    /// The engine's record table, at hand for the inlined read path.
    pub(crate) orecs: OrecView,
    pub(crate) writes: WriteSet,
    pub(crate) locks: LockSet,
    pub(crate) allocations: Vec<Block>,
    pub(crate) frees: Vec<Block>,
    pub(crate) limbo: Vec<Retired>,
    pub(crate) doomed: Option<AbortReason>,
    pub(crate) options: TxOptions,
    pub(crate) age: u64,
    pub(crate) aborts_in_row: u32,
    /// What the transaction's next attempt must be (`mode.rs`).
    pub(crate) escalation: Escalation,
    pub(crate) last_abort: Option<AbortReason>,
    pub(crate) started_at: Option<Stamp>,
    /// How long the attempt that ended last ran (zero when statistics are off).
    pub(crate) last_elapsed: Duration,
    /// Attempts may run solo (see `solo.rs`) when this descriptor is the engine's only.
    pub(crate) solo_allowed: bool,
    /// The undo log of a solo attempt (one runs while `mode().is_solo()`): its writes are
    /// in memory, their old words here.
    pub(crate) solo_undo: UndoLog,
    /// Values lent by reference ([`Transaction::read_with`](crate::Transaction::read_with))
    /// right now: while any is, nothing is changed in place (`inplace.rs`).
    pub(crate) lent: u32,
    /// The `TVar`s this attempt changes in place: each one's word address, with the
    /// position in `allocations` of the private value written to it (`inplace.rs`).
    pub(crate) private: WordMap<usize>,
}

/// A transaction descriptor: the low-level interface to the engine, for the C ABI and
/// for schedulers. Rust programs normally use [`Stm::atomically`] instead.
///
/// ```
/// use lutra_stm::{Stm, TxDescriptor, TxOptions};
/// let stm = Stm::default();
/// let mut word: usize = 5;
/// let mut tx = TxDescriptor::new(&stm).unwrap();
/// tx.begin(TxOptions::default());
/// // SAFETY: `word` is an aligned word that outlives the transaction.
/// unsafe {
///     let seen = tx.load(&word).unwrap();
///     tx.store(&mut word, seen + 1, usize::MAX).unwrap();
/// }
/// tx.commit().unwrap();
/// assert_eq!(word, 6);
/// ```
pub struct TxDescriptor {
    pub(crate) stm: Arc<StmInner>,
    pub(crate) core: Core,
}

// SAFETY: the raw addresses a descriptor keeps are only numbers until it dereferences
// them inside an attempt, under the engine's protocol; nothing in it is tied to the
// thread that created it (the epoch announcement lives in the registry slot), except
// a solo undo window placed in a thread's storage, whose placer keeps the descriptor
// on that thread (`place_solo_undo_window`'s contract).
unsafe impl Send for TxDescriptor {}

impl fmt::Debug for TxDescriptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TxDescriptor")
            .field("slot", &self.core.slot)
            .field("mode", &self.core.mode())
            .finish_non_exhaustive()
    }
}

impl TxDescriptor {
    /// A new descriptor for `stm`, taking one registry slot until dropped.
    ///
    /// Fails with [`RegistryFull`] when `max_descriptors` descriptors are alive.
    pub fn new(stm: &Stm) -> Result<Self, RegistryFull> {
        let slot = stm.inner.registry.acquire().ok_or(RegistryFull)?;
        let shared = stm.inner.registry.get(slot);
        let status = shared.status();
        let core = Core {
            slot,
            shared: NonNull::from(shared),
            status,
            rv: 0,
            reads: ReadSet::default(),
            orecs: stm.inner.orecs.view(),
            writes: WriteSet::default(),
            locks: LockSet::default(),
            allocations: Vec::new(),
            frees: Vec::new(),
            limbo: Vec::new(),
            doomed: None,
            options: TxOptions::default(),
            age: 0,
            aborts_in_row: 0,
            escalation: Escalation::None,
            last_abort: None,
            started_at: None,
            last_elapsed: Duration::ZERO,
            solo_allowed: false,
            solo_undo: UndoLog::default(),
            lent: 0,
            private: WordMap::default(),
        };
        // Step 2 of the solo protocol: no attempt of this descriptor may run beside a
        // solo one.
        stm.inner.wait_until(|| !stm.inner.solo.is_held());
        Ok(Self {
            stm: stm.inner.clone(),
            core,
        })
    }

    /// The engine this descriptor belongs to.
    pub fn stm(&self) -> Stm {
        Stm::handle(&self.stm)
    }

    /// Asks the engine's hooks whether the next attempt may start. The caller acts on
    /// the answer (see [`Decision`]) and asks again unless it is `Proceed` or
    /// `Serialize` (then begin with `irrevocable` set).
    pub fn start_decision(&self) -> Decision {
        if !self.stm.hooks_active {
            return Decision::Proceed;
        }
        self.stm.config.hooks.on_start(&self.event(None))
    }

    /// Reports the abort of the last attempt to the hooks and returns their decision
    /// for the next one.
    pub fn abort_decision(&self, reason: AbortReason) -> Decision {
        if !self.stm.hooks_active {
            return Decision::Proceed;
        }
        self.stm.config.hooks.on_abort(&self.event(Some(reason)))
    }

    pub(crate) fn event(&self, reason: Option<AbortReason>) -> TxEvent {
        self.core.event(reason)
    }

    /// Announces the next transaction's options before its first attempt begins, so
    /// that the start hook ([`TxDescriptor::start_decision`]) sees its site and no
    /// aborts (not those of the previous transaction). [`TxDescriptor::begin`] does it
    /// too; call it first when asking the start hook before `begin`.
    ///
    /// # Panics
    /// If an attempt is active.
    #[inline]
    pub fn prepare(&mut self, options: TxOptions) {
        assert!(
            !self.core.mode().is_active(),
            "a transaction attempt is already active on this descriptor"
        );
        self.core.set_mode(Mode::Idle);
        self.core.options = options;
        self.core.aborts_in_row = 0;
        self.core.escalation = Escalation::None;
        self.core.last_abort = None;
        self.core.last_elapsed = Duration::ZERO;
    }

    /// Begins the first attempt of a new transaction. Its contention priority is the
    /// start-priority hook's answer if it has one, otherwise `options.priority`.
    ///
    /// # Panics
    /// If an attempt is already active (a programming error; the C ABI checks first).
    #[inline]
    pub fn begin(&mut self, options: TxOptions) {
        self.prepare(options);
        if self.stm.hooks_active {
            self.ask_start_priority();
        }
        let (stm, core) = (&*self.stm, &mut self.core);
        core.start_attempt(stm);
        core.age = core.rv;
    }

    /// Lets the start-priority hook set the transaction's priority.
    #[cold]
    fn ask_start_priority(&mut self) {
        if let Some(priority) = self.stm.config.hooks.start_priority(&self.event(None)) {
            self.core.options.priority = priority;
        }
    }

    /// Begins the next attempt of the current transaction (after a rollback): keeps its
    /// age, priority and site. Waits first if the last attempt gave way to an
    /// irrevocable transaction.
    ///
    /// # Panics
    /// If an attempt is already active.
    pub fn restart(&mut self) {
        self.core.start_attempt(&self.stm);
    }

    /// Lets this descriptor's attempts run solo, uninstrumented, whenever it is the
    /// only descriptor of its engine (GCC's libitm does the same with one thread):
    /// reads are plain loads, writes go to memory with an undo log. For drivers whose
    /// transactions only read and write words through [`TxDescriptor::load`] and
    /// [`TxDescriptor::store`] (the C ABI): a solo attempt keeps no read set, so it
    /// cannot `retry` (it fails with [`AbortReason::Misuse`]), and it cannot take
    /// `or_else` checkpoints or write boxed `TVar`s. Takes effect at the next attempt.
    ///
    /// While a solo attempt runs, creating another descriptor of the same engine
    /// waits for it to end, so a thread must not create one inside its own solo
    /// attempt.
    pub fn allow_solo(&mut self, allow: bool) {
        self.core.solo_allowed = allow;
    }

    /// Moves the window of this descriptor's solo undo log (see [`UndoWindow`]) to
    /// `window`, or back to the descriptor's own heap cell with `None`: the window's
    /// state goes with it, and the place it leaves is closed. While a solo attempt
    /// runs the window is open, and code that writes a word in place may log it there
    /// itself; otherwise it is closed. The C ABI places it in a thread-local variable
    /// that its inline accesses test (`LUTRA_INLINE` in `stm.h`).
    ///
    /// # Safety
    /// `window` must be valid for reads and writes, written by no one but this
    /// descriptor and code that logs its writes as [`UndoWindow`] allows, until the
    /// window moves again or the descriptor is dropped; and while it is placed, the
    /// descriptor is used (and dropped) only where `window` stays valid — for a
    /// thread-local window, on its thread.
    pub unsafe fn place_solo_undo_window(&mut self, window: Option<NonNull<UndoWindow>>) {
        // SAFETY: the caller's contract is `UndoLog::place`'s.
        unsafe { self.core.solo_undo.place(window) }
    }

    /// Whether the running attempt runs solo (see [`TxDescriptor::allow_solo`]).
    pub fn is_solo(&self) -> bool {
        self.core.mode().is_solo()
    }

    /// Whether an attempt is running.
    pub fn is_active(&self) -> bool {
        self.core.mode().is_active()
    }

    /// Whether the running attempt is irrevocable.
    pub fn is_irrevocable(&self) -> bool {
        self.core.mode().is_irrevocable()
    }

    /// Whether the running attempt is irrevocable only because the engine chose so:
    /// its transaction outgrew the read or write set, or aborted
    /// [`Config::irrevocable_after_aborts`](crate::Config::irrevocable_after_aborts)
    /// times in a row. It will not abort for conflicts or size, yet it has done
    /// nothing the program cannot undo, so a `retry` may still roll it back and wait
    /// (an irrevocable attempt that the program asked for cannot). False once the
    /// program asks for irrevocability itself ([`TxDescriptor::become_irrevocable`]).
    pub fn is_fallback_irrevocable(&self) -> bool {
        self.core.mode().is_irrevocable() && self.core.escalation == Escalation::Fallback
    }

    /// Whether a `retry` may roll the running attempt back and wait: false in an
    /// attempt that the program made irrevocable (it may have done what cannot be
    /// undone).
    pub fn may_retry(&self) -> bool {
        !self.core.mode().is_irrevocable() || self.core.escalation == Escalation::Fallback
    }

    /// The reason the running attempt is doomed, if it is.
    pub fn doomed(&self) -> Option<AbortReason> {
        self.core.doomed
    }

    /// The options of the current transaction.
    pub fn options(&self) -> TxOptions {
        self.core.options
    }

    /// Attempts of the current transaction aborted so far.
    pub fn aborts_in_row(&self) -> u32 {
        self.core.aborts_in_row
    }

    /// This descriptor's registry slot.
    pub fn slot(&self) -> usize {
        self.core.slot
    }

    /// This descriptor's own statistics.
    pub fn stats(&self) -> Counters {
        self.shared().stats.total()
    }

    fn shared(&self) -> &SharedDescriptor {
        self.stm.registry.get(self.core.slot)
    }

    /// Reads the word at `addr` in the running attempt.
    ///
    /// # Errors
    /// The abort that dooms the attempt (it stays doomed: commit will fail too), or
    /// [`AbortReason::Misuse`] when no attempt is active.
    ///
    /// # Safety
    /// `addr` must be aligned and valid for reads for as long as any transaction may
    /// access it, and must only be written by transactions of this engine while
    /// transactions may access it.
    #[inline]
    pub unsafe fn load(&mut self, addr: *const usize) -> Result<usize, Abort> {
        self.core.load(&self.stm, addr as usize)
    }

    /// The common case of [`TxDescriptor::load`], inlined into the caller: the word
    /// at `addr`, or `None` when the full [`TxDescriptor::load`] must run (it has
    /// done nothing then). For a caller that keeps its own slow path out of line.
    ///
    /// # Safety
    /// As [`TxDescriptor::load`].
    #[inline(always)]
    pub unsafe fn try_load(&mut self, addr: *const usize) -> Option<usize> {
        self.core.try_load(addr as usize)
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
        let index = checked_word_index(addr as usize)?;
        let front = front.as_ptr();
        // SAFETY: `front` points to a valid front (the contract), read without a
        // reference, so a closed one shared by threads is only read; an open front's
        // owner is the descriptor it lies in (the contract); `addr` is a word's
        // address (checked), valid by the contract.
        unsafe {
            load_through(
                front,
                || &mut Self::owner_of_front(front).core,
                addr as usize,
                index,
            )
        }
    }

    /// The write of the whole word at `addr` through a read front, as
    /// [`TxDescriptor::try_load_through_front`] reads: the common case of
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
        if checked_word_index(addr as usize).is_none() {
            return false;
        }
        let front = front.as_ptr();
        // SAFETY: as in `try_load_through_front`; an open or plain front's owner is
        // the descriptor it lies in.
        unsafe {
            store_through(
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

    /// [`TxDescriptor::load`] without its inlined common case: for a caller whose own
    /// [`TxDescriptor::try_load`] (or a read through the front) just returned `None`.
    ///
    /// # Errors
    /// As [`TxDescriptor::load`].
    ///
    /// # Safety
    /// As [`TxDescriptor::load`].
    pub unsafe fn load_uninlined(&mut self, addr: *const usize) -> Result<usize, Abort> {
        self.core.load_slow(&self.stm, addr as usize)
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
        self.core.store(&self.stm, addr as usize, value, mask, None)
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
            .store(&self.stm, addr, value, usize::MAX, Some(retire_old))
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
        if size == 0 || self.core.mode().is_solo() {
            return Ok(());
        }
        self.write_unchanged_words(addr, size)
    }

    /// The writes of [`TxDescriptor::write_unchanged`], apart from its callers.
    #[inline(never)]
    fn write_unchanged_words(&mut self, addr: usize, size: usize) -> Result<(), Abort> {
        let word = std::mem::size_of::<usize>();
        for at in (addr..addr + size.div_ceil(word) * word).step_by(word) {
            self.core.store(&self.stm, at, 0, 0, None)?;
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
    pub fn become_serial(&mut self) -> Result<(), Abort> {
        self.core.become_serial(&self.stm)
    }

    /// Whether the running attempt is serial ([`TxDescriptor::become_serial`]).
    pub fn is_serial(&self) -> bool {
        matches!(self.core.mode(), Mode::Serial | Mode::SoloIrrevocable)
    }

    /// Dooms the running attempt with `reason` (an explicit abort, a retry).
    pub fn doom(&mut self, reason: AbortReason) -> Abort {
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

impl Drop for TxDescriptor {
    fn drop(&mut self) {
        self.core.rollback(&self.stm, AbortReason::Panic);
        self.stm.epochs.adopt(&mut self.core.limbo);
        self.stm.registry.release(self.core.slot);
    }
}

impl Core {
    /// The attempt's mode (`mode.rs`).
    #[inline(always)]
    pub(crate) fn mode(&self) -> Mode {
        self.reads.front.mode
    }

    /// Moves the attempt to `mode`: only along the transitions of `mode.rs`'s table.
    #[inline(always)]
    pub(crate) fn set_mode(&mut self, mode: Mode) {
        self.reads.front.mode = mode;
    }

    #[inline]
    pub(crate) fn shared<'s>(&self, _stm: &'s StmInner) -> &'s SharedDescriptor {
        // SAFETY: the pointer came from `stm.registry.get(self.slot)` of the engine
        // this descriptor holds (an `Arc`), whose registry never moves or shrinks.
        unsafe { self.shared.as_ref() }
    }

    /// Publishes the transaction's age (its first attempt's snapshot, fixed for
    /// every attempt) and priority for contention managers, which read them only
    /// from an attempt found holding a record: called before an attempt takes its
    /// first lock (`Core::acquire`), whose compare-and-swap publishes them.
    #[inline]
    pub(crate) fn publish_age_and_priority(&self, stm: &StmInner) {
        let shared = self.shared(stm);
        shared
            .priority
            .store(self.options.priority as u64, Ordering::Relaxed);
        shared.age.store(self.age, Ordering::Relaxed);
    }

    /// What the hooks are told about the current transaction.
    pub(crate) fn event(&self, reason: Option<AbortReason>) -> TxEvent {
        TxEvent {
            site: self.options.site,
            slot: self.slot,
            aborts: self.aborts_in_row,
            reason,
            elapsed: self.last_elapsed,
            priority: self.options.priority,
            irrevocable: self.options.irrevocable || self.escalation.is_irrevocable(),
        }
    }

    /// Begins an attempt. The common case (a first attempt, or one after a `retry`,
    /// on an engine without hooks, not irrevocable; solo or instrumented) is inlined
    /// and straight; everything else goes through [`Core::start_special`].
    #[inline]
    pub(crate) fn start_attempt(&mut self, stm: &StmInner) {
        // One test of the bytes or-ed together: an attempt running, an abort to give
        // way to, an irrevocable start or restart, hooks.
        let special = self.mode().active_bits()
            | u8::from(self.last_abort.is_some())
            | u8::from(self.options.irrevocable)
            | self.escalation as u8
            | u8::from(stm.hooks_active);
        if special != 0 {
            self.start_special(stm);
            return;
        }
        // An attempt after aborts (a `retry` restart) is not straight: the end that
        // counts its transaction's aborts is the full one.
        let straight = !stm.config.stats & (self.aborts_in_row == 0);
        if self.solo_allowed && stm.solo.try_enter(&stm.registry, self.slot) {
            self.start_solo(stm);
            self.set_mode(if straight {
                Mode::SoloStraight
            } else {
                Mode::Solo
            });
        } else {
            self.announce(stm);
            self.set_mode(if straight {
                Mode::Straight
            } else {
                Mode::Instrumented
            });
        }
        if stm.config.stats {
            self.started_at = Some(Stamp::now());
        }
    }

    /// [`Core::start_attempt`] for every case but the straight one.
    #[cold]
    #[inline(never)]
    fn start_special(&mut self, stm: &StmInner) {
        assert!(
            !self.mode().is_active(),
            "a transaction attempt is already active on this descriptor"
        );
        if self.last_abort.is_some() {
            self.wait_after_abort(stm);
        }
        let irrevocable = self.options.irrevocable || self.escalation.is_irrevocable();
        if self.solo_allowed && !irrevocable && stm.solo.try_enter(&stm.registry, self.slot) {
            self.start_solo(stm);
            if stm.config.stats {
                self.started_at = Some(Stamp::now());
            }
            // Nothing but the solo gate to give back at its end, which the straight
            // end does too; after an abort, the full end also forgets the abort.
            let straight =
                stm.straight_ends && self.last_abort.is_none() && self.aborts_in_row == 0;
            self.set_mode(if straight {
                Mode::SoloStraight
            } else {
                Mode::Solo
            });
            return;
        }
        if irrevocable {
            // Before announcing: a serial attempt (which holds the gate) waits for
            // every announced attempt to end.
            self.close_gate(stm);
        }
        self.announce(stm);
        self.set_mode(Mode::Instrumented);
        if stm.config.stats {
            self.started_at = Some(Stamp::now());
        }
        if irrevocable {
            self.set_mode(Mode::GateHeld);
            self.start_irrevocable(stm);
        }
    }

    /// Makes the attempt active and visible: a new serial in the own status word, the
    /// epoch announced, the snapshot taken.
    #[inline(always)]
    fn announce(&mut self, stm: &StmInner) {
        self.publish_active(stm);
        if stm.serial.held_by_other(self.slot) {
            self.wait_for_serial(stm);
        }
        self.become_active(stm);
    }

    /// The visible half of [`Core::announce`]: a new serial in the own status word,
    /// then the epoch announced (step 3 of the serial protocol, `serial.rs`, checks
    /// the serial gate after it).
    #[inline(always)]
    pub(crate) fn publish_active(&mut self, stm: &StmInner) {
        let shared = self.shared(stm);
        shared.size.store(0, Ordering::Relaxed);
        self.status = self.status.next_active();
        // ORDERING: the full fence in `announce_in` orders this store before the
        // attempt's first read; killers find the attempt through a record it locked
        // later (a CAS), which publishes this store to them.
        shared.status.store(self.status.encode(), Ordering::Release);
        stm.epochs.announce_in(&shared.epoch);
    }

    /// Whether the inlined access paths may run: the read set is open (see
    /// [`Core::reads`]).
    #[inline(always)]
    pub(crate) fn fast_access(&self) -> bool {
        self.reads.is_open()
    }

    /// The private half of [`Core::announce`], once no serial attempt stands in the
    /// way: the attempt runs from its snapshot on.
    #[inline(always)]
    pub(crate) fn become_active(&mut self, stm: &StmInner) {
        self.doomed = None;
        self.reads.open();
        self.rv = stm.clock.load(Ordering::SeqCst);
    }

    /// Begins a solo attempt (`solo.rs`): no other descriptor exists, so there is no
    /// one to announce an epoch or a snapshot to; the access paths go to the solo
    /// branches of `load_slow` and `store_slow`.
    #[inline]
    pub(crate) fn start_solo(&mut self, stm: &StmInner) {
        self.solo_undo.open();
        self.publish_solo(stm);
    }

    /// [`Core::start_solo`] with an undo log that opens without the allocator.
    #[inline(always)]
    pub(crate) fn start_solo_ready(&mut self, stm: &StmInner) {
        self.solo_undo.open_ready();
        self.publish_solo(stm);
    }

    /// The solo half of an attempt's start: a new serial in the own status word, so
    /// that [`Stm::quiesce`](crate::Stm::quiesce) waits for the attempt as for any
    /// other. Nothing else is published: no other descriptor exists to read the
    /// read set's size, and the epoch stays quiescent. The read set is closed (every
    /// attempt's end closes it) and stays so. The caller sets the solo mode.
    #[inline(always)]
    fn publish_solo(&mut self, stm: &StmInner) {
        debug_assert!(!self.reads.is_open() && self.reads.len() == 0);
        self.status = self.status.next_active();
        self.shared(stm)
            .status
            .store(self.status.encode(), Ordering::Release);
        self.doomed = None;
    }

    /// Before an attempt that follows an abort: gives way to the irrevocable
    /// transaction or the killer the last attempt lost to.
    #[cold]
    fn wait_after_abort(&self, stm: &StmInner) {
        match self.last_abort {
            Some(AbortReason::Irrevocable) if !self.escalation.is_irrevocable() => {
                stm.wait_until(|| !stm.gate.closed_by_other(self.slot));
            }
            Some(AbortReason::Killed) => self.wait_for_killer(stm),
            _ => {}
        }
    }

    /// After being killed, waits until the killer's attempt has ended. Restarting at
    /// once would re-lock (under encounter-time locking) the record the killer waits
    /// for before it can take it, and be killed again, forever: the killer wins by
    /// the contention manager's order, so let it finish. Holds nothing while waiting.
    fn wait_for_killer(&self, stm: &StmInner) {
        let shared = self.shared(stm);
        let (killer_slot, killer_serial) = shared.killer_of(stm, self.status.serial());
        stm.wait_for_attempt_end(killer_slot, killer_serial);
    }

    pub(crate) fn doom(&mut self, reason: AbortReason) -> Abort {
        self.set_mode(self.mode().doomed());
        self.reads.close();
        if self.doomed.is_none() {
            self.doomed = Some(reason);
        }
        Abort::new(self.doomed.unwrap_or(reason))
    }

    /// Fails if the attempt is doomed, was killed, or is not running.
    #[inline]
    pub(crate) fn check_usable(&mut self, stm: &StmInner) -> Result<(), Abort> {
        if let Some(reason) = self.doomed {
            return Err(Abort::new(reason));
        }
        if !self.mode().is_active() {
            return Err(Abort::new(AbortReason::Misuse));
        }
        // Only a kill changes the status word from outside, and killers find their
        // victim through a record it has locked: an attempt holding no lock (every
        // commit-time-locking attempt before its commit) need not look.
        if !self.locks.is_empty()
            && self.shared(stm).status.load(Ordering::Acquire) != self.status.encode()
        {
            return Err(self.doom(AbortReason::Killed));
        }
        Ok(())
    }

    #[inline]
    pub(crate) fn record_allocation(
        &mut self,
        addr: usize,
        size: usize,
        release: Release,
        tvar_value: bool,
    ) {
        // A block for the program (not a boxed value) keeps the attempt straight:
        // the straight end forgets it, a rollback releases it.
        if tvar_value {
            self.mark_not_straight();
        }
        self.allocations.push(Block {
            addr,
            size,
            release,
            tvar_value,
        });
    }

    /// What ends every attempt, once its write and lock sets are empty: the inlined
    /// paths closed, the read set emptied, the own status word idle and the epoch
    /// quiescent.
    #[inline(always)]
    pub(crate) fn go_idle(&mut self, stm: &StmInner) {
        self.reads.close();
        self.reads.clear();
        self.publish_idle(stm);
        stm.epochs.quiesce_in(&self.shared(stm).epoch);
    }

    /// The own status word reads idle.
    #[inline(always)]
    pub(crate) fn publish_idle(&mut self, stm: &StmInner) {
        self.status = self.status.idle();
        self.shared(stm)
            .status
            .store(self.status.encode(), Ordering::Release);
    }

    /// Ends the attempt: clears the sets, goes idle and quiescent, counts it. A straight
    /// attempt that committed has nothing else to do; any other goes on through
    /// [`Core::finish_special`].
    #[inline]
    pub(crate) fn finish(&mut self, stm: &StmInner, outcome: Result<(), AbortReason>) {
        self.allocations.clear();
        self.writes.clear();
        self.locks.clear();
        self.go_idle(stm);
        let straight_commit = self.mode().is_straight() && outcome.is_ok();
        if !straight_commit {
            self.finish_special(stm, outcome);
        } else if self.mode().is_solo() {
            self.end_solo(stm);
        }
        // A commit leaves nothing to give way to (`record_outcome`); one after
        // aborts leaves them counted until the next `prepare`.
        let settled =
            straight_commit || (outcome.is_ok() && stm.straight_ends && self.aborts_in_row == 0);
        self.set_mode(if settled { Mode::Settled } else { Mode::Idle });
    }

    /// Ends a solo attempt: closes its undo window, then gives back the solo gate.
    #[inline]
    pub(crate) fn end_solo(&mut self, stm: &StmInner) {
        self.solo_undo.close();
        stm.solo.exit();
    }

    /// [`Core::end_solo`] with an undo log that closes without the allocator.
    #[inline(always)]
    pub(crate) fn end_solo_ready(&mut self, stm: &StmInner) {
        self.solo_undo.close_window();
        stm.solo.exit();
    }

    /// The rest of [`Core::finish`] for an attempt that was not straight or did not
    /// commit: what it holds beyond its sets, its statistics and the hooks.
    #[cold]
    #[inline(never)]
    fn finish_special(&mut self, stm: &StmInner, outcome: Result<(), AbortReason>) {
        self.reads.clear_and_shrink(READ_SET_KEPT);
        self.frees.clear();
        self.lent = 0;
        if !self.private.is_empty() {
            self.forget_private();
        }
        // The gate is never kept between attempts, not even for an irrevocable restart
        // (which closes it again when it begins): kept through the backoff and the
        // hooks' decisions, it would hold back every update commit meanwhile.
        let mode = self.mode();
        if mode == Mode::Serial {
            stm.serial.leave(self.slot);
        }
        if mode.holds_gate() {
            stm.gate.open(self.slot);
        }
        if mode.is_solo() {
            self.end_solo(stm);
        }
        let was_irrevocable = mode.is_irrevocable();
        self.record_outcome(stm, outcome, was_irrevocable);
        if stm.hooks_active {
            stm.config.hooks.on_attempt_end(&self.event(outcome.err()));
        }
    }

    /// The attempt takes on something its end must release or report: it is no
    /// longer straight (see `mode.rs`).
    #[inline]
    pub(crate) fn mark_not_straight(&mut self) {
        self.set_mode(self.mode().not_straight());
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn record_outcome(
        &mut self,
        stm: &StmInner,
        outcome: Result<(), AbortReason>,
        irrevocable: bool,
    ) {
        let aborts_before = self.aborts_in_row;
        match outcome {
            Ok(()) => {
                self.escalation = Escalation::None;
                self.last_abort = None;
            }
            // A retry is no abort, but it ends the attempt: what the next attempt
            // must give way to is only what ended the one just before it. A fallback
            // that retried runs again as it would have first (`fallback.rs`).
            Err(AbortReason::Retry) => {
                self.last_abort = None;
                self.end_fallback_for_retry();
            }
            Err(reason) => {
                self.aborts_in_row = self.aborts_in_row.saturating_add(1);
                self.last_abort = Some(reason);
                self.choose_fallback(stm, reason);
            }
        }
        let Some(started_at) = self.started_at.take() else {
            self.last_elapsed = Duration::ZERO;
            return;
        };
        self.last_elapsed = started_at.elapsed();
        let outcome = Outcome {
            result: outcome,
            irrevocable,
            aborts_before,
            elapsed: self.last_elapsed,
        };
        self.shared(stm).stats.count(self.options.site, &outcome);
    }
}
