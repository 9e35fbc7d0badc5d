//! Engine configuration: design, contention manager, hooks, parking, limits.

use crate::api::hooks::{NoHooks, TxHooks};
use crate::cm::{self, ContentionManager};
use crate::global::parking::{Parking, ThreadParking};
use std::fmt;
use std::sync::Arc;

/// The STM design: when write locks are taken. Both designs buffer writes (write-back)
/// and share every other part of the engine (tinySTM's WB-CTL and WB-ETL).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DesignKind {
    /// Write-back, commit-time locking: writes are buffered and their locations locked
    /// only while committing (as in TL2). Lock holders are always committing, so a
    /// preempted thread blocks others only briefly.
    WriteBackCtl,
    /// Write-back, encounter-time locking: a location is locked at its first write and
    /// stays locked until commit or abort. Conflicts are found early.
    WriteBackEtl,
}

impl DesignKind {
    /// Both designs, for sweeps.
    pub const ALL: [DesignKind; 2] = [DesignKind::WriteBackCtl, DesignKind::WriteBackEtl];

    /// `"wb-ctl"` or `"wb-etl"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::WriteBackCtl => "wb-ctl",
            Self::WriteBackEtl => "wb-etl",
        }
    }

    /// Parses `wb-ctl` / `wb-etl` (also `ctl` / `etl`); `None` otherwise.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "wb-ctl" | "wbctl" | "ctl" => Some(Self::WriteBackCtl),
            "wb-etl" | "wbetl" | "etl" => Some(Self::WriteBackEtl),
            _ => None,
        }
    }
}

/// How an engine instance behaves. Build one with `Config::default()` and the `with_*`
/// methods.
///
/// ```
/// use lutra_stm::{Config, DesignKind, Stm, cm::Timestamp};
/// let stm = Stm::new(Config::default().with_design(DesignKind::WriteBackEtl).with_manager(Timestamp));
/// assert_eq!(stm.config().design, DesignKind::WriteBackEtl);
/// ```
#[derive(Clone)]
pub struct Config {
    /// When write locks are taken.
    pub design: DesignKind,
    /// Who gives way in a conflict.
    pub manager: Arc<dyn ContentionManager>,
    /// Told of starts, commits and aborts (a scheduler's policy).
    pub hooks: Arc<dyn TxHooks>,
    /// How `retry` blocks and how waits yield.
    pub parking: Arc<dyn Parking>,
    /// Whether to count statistics.
    pub stats: bool,
    /// The ownership-record table has `2^orec_bits` entries.
    pub orec_bits: u32,
    /// Most descriptors (threads or tasks running transactions) alive at once.
    pub max_descriptors: usize,
    /// A read or write set larger than this aborts with
    /// [`AbortReason::Capacity`](crate::AbortReason::Capacity), once the read set has
    /// been compacted (a record read again needs no second entry); the transaction's
    /// next attempt then runs irrevocable, which no set limit binds. So a transaction
    /// never fails for its size: it runs at most once more, alone among updaters.
    pub max_set_entries: usize,
    /// After this many aborts in a row for conflicts (validation, read or write
    /// conflict, killed, gave way to an irrevocable transaction), a transaction's next
    /// attempt runs irrevocable: it cannot abort again, whatever the contention
    /// manager, so every transaction commits within `irrevocable_after_aborts + 1`
    /// attempts (plus one per explicit abort, and one after a capacity abort). Such an
    /// attempt may still `retry`. 0 turns the bound off.
    pub irrevocable_after_aborts: u32,
}

impl Config {
    /// The default of [`Config::irrevocable_after_aborts`]: a transaction that
    /// aborted 32 times in a row for conflicts runs its next attempt irrevocable.
    pub const IRREVOCABLE_AFTER_ABORTS: u32 = 32;
}

impl Default for Config {
    /// Commit-time locking, randomized backoff, no hooks, thread parking, statistics on,
    /// 2^20 ownership records, 4096 descriptors, 2^24 set entries, irrevocable after
    /// [`Config::IRREVOCABLE_AFTER_ABORTS`] aborts in a row.
    fn default() -> Self {
        Self {
            design: DesignKind::WriteBackCtl,
            manager: Arc::new(cm::Backoff::default()),
            hooks: Arc::new(NoHooks),
            parking: Arc::new(ThreadParking),
            stats: true,
            orec_bits: 20,
            max_descriptors: 4096,
            max_set_entries: 1 << 24,
            irrevocable_after_aborts: Self::IRREVOCABLE_AFTER_ABORTS,
        }
    }
}

impl Config {
    /// Sets the design.
    pub fn with_design(mut self, design: DesignKind) -> Self {
        self.design = design;
        self
    }

    /// Sets the contention manager.
    pub fn with_manager(mut self, manager: impl ContentionManager + 'static) -> Self {
        self.manager = Arc::new(manager);
        self
    }

    /// Sets the contention manager from a shared one (see [`cm::by_name`]).
    pub fn with_shared_manager(mut self, manager: Arc<dyn ContentionManager>) -> Self {
        self.manager = manager;
        self
    }

    /// Installs scheduler hooks.
    pub fn with_hooks(mut self, hooks: Arc<dyn TxHooks>) -> Self {
        self.hooks = hooks;
        self
    }

    /// Installs a parking implementation.
    pub fn with_parking(mut self, parking: Arc<dyn Parking>) -> Self {
        self.parking = parking;
        self
    }

    /// Turns statistics on or off.
    pub fn with_stats(mut self, on: bool) -> Self {
        self.stats = on;
        self
    }

    /// Sets the ownership-record table size to `2^bits` (1 ≤ bits ≤ 30).
    ///
    /// # Panics
    /// If `bits` is out of range.
    pub fn with_orec_bits(mut self, bits: u32) -> Self {
        assert!(
            (1..=30).contains(&bits),
            "orec_bits must be in 1..=30, got {bits}"
        );
        self.orec_bits = bits;
        self
    }

    /// Sets the largest read or write set before a capacity abort (see
    /// [`Config::max_set_entries`]).
    pub fn with_max_set_entries(mut self, entries: usize) -> Self {
        self.max_set_entries = entries;
        self
    }

    /// Sets how many aborts in a row for conflicts make a transaction's next attempt
    /// irrevocable (see [`Config::irrevocable_after_aborts`]; 0: never).
    pub fn with_irrevocable_after_aborts(mut self, aborts: u32) -> Self {
        self.irrevocable_after_aborts = aborts;
        self
    }

    /// Sets the most descriptors alive at once.
    pub fn with_max_descriptors(mut self, descriptors: usize) -> Self {
        self.max_descriptors = descriptors;
        self
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("design", &self.design)
            .field("manager", &self.manager.name())
            .field("stats", &self.stats)
            .field("orec_bits", &self.orec_bits)
            .field("max_descriptors", &self.max_descriptors)
            .field("max_set_entries", &self.max_set_entries)
            .field("irrevocable_after_aborts", &self.irrevocable_after_aborts)
            .finish_non_exhaustive()
    }
}
