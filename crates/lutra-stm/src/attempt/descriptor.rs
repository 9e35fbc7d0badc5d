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
//! An attempt's begin and end are in `lifecycle.rs`, its mode's table in `mode.rs`;
//! what it does through the descriptor in `operations.rs`, whose protocols are in
//! `access.rs` and `conflict.rs` (reads, writes, conflicts, validation), `commit.rs`
//! (commit and rollback) and `irrevocable.rs`.
//!
//! # Invariants
//! - While an attempt is active, the own status word is `Active` (or `Killed` by
//!   another transaction, or `Committing` inside `commit`) with this attempt's serial,
//!   and the own epoch is announced.
//! - Outside attempts, the descriptor holds no lock, no gate, no epoch announcement.
//! - Every entry of the read set records a version no newer than the snapshot `rv`.

use crate::api::hooks::{Decision, TxEvent};
use crate::attempt::abort::AbortReason;
use crate::attempt::mode::{Escalation, Mode};
use crate::global::epoch::Limbo;
use crate::global::orec::OrecView;
use crate::global::registry::{SharedDescriptor, Status};
use crate::global::stats::Counters;
use crate::global::stm::{Stm, StmInner};
use crate::global::ticks::Stamp;
use crate::modes::read_only::READ_ONLY_ATTEMPTS;
use crate::sets::read_set::ReadSet;
use crate::sets::undo_log::{UndoLog, UndoWindow};
use crate::sets::write_set::{Block, LockSet, WordMap, WriteSet};
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;

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
    /// A hint that the transaction only reads: its first attempt keeps no read set
    /// (as tinySTM's `read_only` attribute), so a long reader writes no entry per
    /// read. Such an attempt aborts when it meets a version newer than its
    /// snapshot (it cannot extend it), and one that writes, frees, calls `retry` or
    /// becomes irrevocable aborts before any effect; the transaction then runs
    /// again keeping a read set. A wrong hint costs an attempt, never a wrong
    /// result.
    pub read_only: bool,
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
    pub(crate) shared: NonNull<SharedDescriptor>,
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
    pub(crate) limbo: Limbo,
    pub(crate) doomed: Option<AbortReason>,
    pub(crate) options: TxOptions,
    pub(crate) age: u64,
    pub(crate) aborts_in_row: u32,
    /// What the transaction's next attempt must be (`mode.rs`).
    pub(crate) escalation: Escalation,
    /// How many more attempts of the transaction may run read-only (`read_only.rs`);
    /// meaningful only while `options.read_only` is set.
    pub(crate) read_only_left: u8,
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
            limbo: Limbo::default(),
            doomed: None,
            options: TxOptions::default(),
            age: 0,
            aborts_in_row: 0,
            escalation: Escalation::None,
            read_only_left: 0,
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
        self.core.read_only_left = u8::from(options.read_only) * READ_ONLY_ATTEMPTS;
        self.core.escalation = if options.read_only {
            Escalation::ReadOnly
        } else {
            Escalation::None
        };
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
    #[inline]
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
}

impl Drop for TxDescriptor {
    fn drop(&mut self) {
        self.core.rollback(&self.stm, AbortReason::Panic);
        self.stm.epochs.adopt(&mut self.core.limbo);
        self.stm.registry.release(self.core.slot);
    }
}
