//! An engine instance: the global version clock, the ownership records, the
//! descriptor registry, the commit gate, the `retry` wait table and the reclamation
//! epochs, with the configuration that chose its design and contention manager.
//!
//! # Invariants
//! - The clock only grows; a commit that wrote takes a unique timestamp from it.
//! - A `TVar` or word must be accessed through one engine instance only: two engines
//!   have two record tables and do not see each other's locks.

use crate::api::config::Config;
use crate::api::config::DesignKind;
use crate::global::epoch::Epochs;
use crate::global::orec::OrecTable;
use crate::global::registry::{Registry, TxState};
use crate::global::stats::{Counters, Stats};
use crate::global::sync::{AtomicU64, AtomicUsize, Ordering};
use crate::global::waiting::WaitTable;
use crate::modes::gate::CommitGate;
use crate::modes::serial::SerialGate;
use crate::modes::solo::SoloGate;
use crate::sets::keyed::LINEAR_MAX;
use crossbeam_utils::CachePadded;
use std::sync::Arc;
use std::sync::atomic::AtomicU64 as IdCounter;

pub(crate) struct StmInner {
    pub(crate) config: Config,
    /// The configured design (`config.design`), read on every write.
    pub(crate) design_kind: DesignKind,
    /// Whether hooks other than [`NoHooks`](crate::NoHooks) are installed: when not,
    /// the engine skips every hook call (one predictable branch each) and attempts
    /// may be straight (`descriptor.rs`).
    pub(crate) hooks_active: bool,
    /// Neither hooks nor statistics: a transaction may begin and end on the straight
    /// paths of `straight.rs`.
    pub(crate) straight_ends: bool,
    /// How many first writes an attempt may buffer on the inlined write path before
    /// the full path (with its size check) takes over; the full path then grants it
    /// room up to the next power of two each time (`Core::store_slow`). None when the
    /// engine's set limit is small enough for the check to matter on every write.
    pub(crate) fast_write_room: usize,
    pub(crate) clock: CachePadded<AtomicU64>,
    pub(crate) orecs: OrecTable,
    pub(crate) registry: Registry,
    pub(crate) waits: WaitTable,
    pub(crate) gate: CommitGate,
    pub(crate) epochs: Epochs,
    pub(crate) solo: SoloGate,
    pub(crate) serial: SerialGate,
    pub(crate) id: u64,
    /// Live [`Stm`] handles. At zero nobody can start a transaction on this engine any
    /// more: threads drop the descriptors they keep for it (`run.rs`), so that the
    /// engine (its record table) is freed.
    pub(crate) handles: AtomicUsize,
}

impl StmInner {
    /// Whether no [`Stm`] handle is left.
    pub(crate) fn abandoned(&self) -> bool {
        self.handles.load(Ordering::Acquire) == 0
    }
}

impl Drop for StmInner {
    fn drop(&mut self) {
        // Every descriptor holds an `Arc` to the engine: none is left, so no
        // transaction can read retired memory any more.
        self.epochs.release_all();
    }
}

/// A transactional memory engine. Cheap to clone (all clones share one engine). The
/// engine is freed once its last handle is dropped and the threads that ran its
/// transactions have each ended one more transaction (on any engine), or
/// exited: each thread keeps a few descriptors for reuse.
///
/// ```
/// use lutra_stm::{Stm, TVar};
/// let stm = Stm::default();
/// let from = TVar::new(100u64);
/// let to = TVar::new(0u64);
/// stm.atomically(|tx| {
///     let amount = 30;
///     tx.modify(&from, |balance| balance - amount)?;
///     tx.modify(&to, |balance| balance + amount)
/// });
/// assert_eq!(stm.atomically(|tx| Ok(tx.read(&from)? + tx.read(&to)?)), 100);
/// ```
pub struct Stm {
    pub(crate) inner: Arc<StmInner>,
}

impl Stm {
    /// A new handle to `inner` (counted in `handles`).
    pub(crate) fn handle(inner: &Arc<StmInner>) -> Self {
        inner.handles.fetch_add(1, Ordering::Relaxed);
        Self {
            inner: inner.clone(),
        }
    }
}

impl Clone for Stm {
    fn clone(&self) -> Self {
        Self::handle(&self.inner)
    }
}

impl Drop for Stm {
    fn drop(&mut self) {
        self.inner.handles.fetch_sub(1, Ordering::Release);
    }
}

impl Default for Stm {
    fn default() -> Self {
        Self::new(Config::default())
    }
}

impl std::fmt::Debug for Stm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stm")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Stm {
    /// A new engine with its own clock and ownership-record table.
    pub fn new(config: Config) -> Self {
        static NEXT_ID: IdCounter = IdCounter::new(1);
        let orecs = OrecTable::new(config.orec_bits);
        let inner = StmInner {
            design_kind: config.design,
            hooks_active: !config.hooks.is_noop(),
            straight_ends: config.hooks.is_noop() && !config.stats,
            fast_write_room: if config.max_set_entries >= 1 << 12 {
                LINEAR_MAX
            } else {
                0
            },
            clock: CachePadded::new(AtomicU64::new(0)),
            waits: WaitTable::new(orecs.len()),
            orecs,
            registry: Registry::new(config.max_descriptors),
            gate: CommitGate::new(),
            epochs: Epochs::new(),
            solo: SoloGate::new(),
            serial: SerialGate::new(),
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            handles: AtomicUsize::new(1),
            config,
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The process-wide engine used by [`atomically`](crate::atomically), created with
    /// `Config::default()` on first use unless [`Stm::init_global`] came first.
    pub fn global() -> &'static Stm {
        GLOBAL.get_or_init(Stm::default)
    }

    /// Configures the process-wide engine. Returns `false` (and changes nothing) if it
    /// was already created.
    pub fn init_global(config: Config) -> bool {
        GLOBAL.set(Stm::new(config)).is_ok()
    }

    /// The configuration this engine was built with.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The global version clock (number of update commits so far).
    pub fn clock(&self) -> u64 {
        self.inner.clock.load(Ordering::SeqCst)
    }

    /// A snapshot of the statistics (empty when statistics are off).
    pub fn stats(&self) -> Stats {
        let mut stats = Stats::default();
        for (slot, shared) in self.inner.registry.in_use() {
            let mine = shared.stats.total();
            if mine != Counters::default() {
                stats.by_descriptor.push((slot, mine));
            }
            shared.stats.add_to(&mut stats.total, &mut stats.by_site);
        }
        stats
    }

    /// Waits until every transaction attempt running when this is called has ended.
    ///
    /// After privatizing data (making it unreachable from shared locations in a
    /// committed transaction), call this before freeing or reusing the data without
    /// transactions: no attempt that could still read it is running afterwards. Must
    /// not be called inside a transaction (it would wait for itself).
    pub fn quiesce(&self) {
        let running: Vec<(usize, u64)> = self
            .inner
            .registry
            .in_use()
            .filter_map(|(slot, shared)| {
                let status = shared.status();
                (status.state() != TxState::Idle).then_some((slot, status.serial()))
            })
            .collect();
        for (slot, serial) in running {
            self.inner.wait_for_attempt_end(slot, serial);
        }
    }
}

impl StmInner {
    /// The engine's wait step: spin briefly, then yield through the parking interface.
    /// While a task yields inside an attempt its worker runs other tasks, so the
    /// thread's "inside a transaction" mark goes with the task, not the thread.
    pub(crate) fn pause(&self, round: u32) {
        if round < 64 {
            crate::global::sync::spin_loop();
        } else {
            let mark = crate::api::run::take_running_mark();
            self.config.parking.yield_now();
            crate::api::run::restore_running_mark(mark);
        }
    }

    /// The engine's way of waiting for a condition: `pause` rounds until `done` holds,
    /// or returns `done`'s error.
    pub(crate) fn try_wait_until<E>(
        &self,
        mut done: impl FnMut() -> Result<bool, E>,
    ) -> Result<(), E> {
        let mut round = 0;
        while !done()? {
            self.pause(round);
            round = round.saturating_add(1);
        }
        Ok(())
    }

    /// Waits (as `pause` does) until `done` holds.
    pub(crate) fn wait_until(&self, mut done: impl FnMut() -> bool) {
        let waited: Result<(), std::convert::Infallible> = self.try_wait_until(|| Ok(done()));
        let Ok(()) = waited;
    }

    /// Waits until the attempt `serial` of the descriptor in `slot` has ended.
    pub(crate) fn wait_for_attempt_end(&self, slot: usize, serial: u64) {
        let shared = self.registry.get(slot);
        self.wait_until(|| {
            let status = shared.status();
            status.serial() != serial || status.state() == TxState::Idle
        });
    }
}

static GLOBAL: std::sync::OnceLock<Stm> = std::sync::OnceLock::new();
