//! Synchronisation of shared structures by locks or by transactions, chosen at start-up
//! (seed 001: luaproc's runtime ported from locks to transactions, without the
//! busy-waits that cost its port up to 3.4x).
//!
//! A [`SyncDomain`] is one choice: [`SyncMode::Locks`] (mutexes and condition
//! variables) or [`SyncMode::Transactions`] (transactions on a private
//! [`lutra_stm::Stm`], never [`Stm::global`](lutra_stm::Stm::global), waiting with
//! `retry` and thread parking). The runtime's run queue and task count use its
//! domain ([`Runtime::sync_domain`](crate::Runtime::sync_domain)); client runtimes (the
//! Lua layer) build their own shared structures from the same toolkit:
//!
//! | file | job |
//! |------|-----|
//! | `engine.rs` | the private engine and its transaction driver (kept apart from user transactions) |
//! | `list.rs` | a transactional linked list of nodes (run queue, `SyncQueue`) |
//! | `cell.rs` | [`SyncCell`]: one value, updated, read, waited on |
//! | `queue.rs` | [`SyncQueue`]: a FIFO with a blocking pop |
//!
//! ```
//! use lutra_sched::sync_mode::{SyncCell, SyncDomain, SyncMode};
//! for mode in [SyncMode::Locks, SyncMode::Transactions] {
//!     let domain = SyncDomain::new(mode);
//!     let processes = SyncCell::new(&domain, 0usize);
//!     processes.update(|n| *n += 1);
//!     assert_eq!(processes.read(|n| *n), 1);
//! }
//! ```

mod cell;
pub(crate) mod engine;
pub(crate) mod list;
mod queue;

pub use cell::SyncCell;
pub use queue::SyncQueue;

use engine::TxEngine;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// Statistics site of the run queue's transactions.
pub const SITE_RUN_QUEUE: u32 = 1;
/// Statistics site of the live-task count's transactions.
pub const SITE_TASK_COUNT: u32 = 2;

/// How shared structures are synchronised.
///
/// ```
/// use lutra_sched::sync_mode::SyncMode;
/// assert_eq!("tm".parse::<SyncMode>(), Ok(SyncMode::Transactions));
/// assert_eq!("locks".parse::<SyncMode>(), Ok(SyncMode::Locks));
/// assert!("spin".parse::<SyncMode>().is_err());
/// assert_eq!(SyncMode::Transactions.to_string(), "tm");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SyncMode {
    /// Mutexes and condition variables (luaproc's original).
    #[default]
    Locks,
    /// Transactions on a private engine; waiting through `retry`.
    Transactions,
}

impl SyncMode {
    /// Both modes, for sweeps and parametrised tests.
    pub const ALL: [SyncMode; 2] = [SyncMode::Locks, SyncMode::Transactions];

    /// `"locks"` or `"tm"` (what `--sync=` takes).
    pub fn name(self) -> &'static str {
        match self {
            Self::Locks => "locks",
            Self::Transactions => "tm",
        }
    }
}

impl fmt::Display for SyncMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--sync=` value that is neither `locks` nor `tm`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseSyncModeError(String);

impl fmt::Display for ParseSyncModeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown synchronisation mode {:?} (expected \"locks\" or \"tm\")",
            self.0
        )
    }
}

impl std::error::Error for ParseSyncModeError {}

impl FromStr for SyncMode {
    type Err = ParseSyncModeError;

    /// Accepts `locks` / `lock` and `tm` / `stm` / `transactions` (any case).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.to_ascii_lowercase().as_str() {
            "locks" | "lock" => Ok(Self::Locks),
            "tm" | "stm" | "transactions" => Ok(Self::Transactions),
            _ => Err(ParseSyncModeError(text.to_string())),
        }
    }
}

/// One synchronisation choice shared by several structures: locks, or one private
/// transactional engine. Cheap to clone (clones share the engine).
///
/// In [`SyncMode::Transactions`] every operation is a transaction of the domain's own
/// engine, separate from user transactions: a user's irrevocable transaction does not
/// stall it, and the non-blocking operations (`update`, `read`, `push`, `try_pop`)
/// may even be called inside a user transaction's closure (they then take effect
/// whether or not the user's transaction commits, and again if it re-runs). The
/// blocking ones (`wait_until`, `pop`) panic there. Operations do not nest: a
/// `SyncCell` closure that uses another structure panics.
///
/// ```
/// use lutra_sched::sync_mode::{SyncCell, SyncDomain, SyncMode};
/// let domain = SyncDomain::new(SyncMode::Transactions);
/// let cell = SyncCell::new(&domain, 1u32);
/// cell.update(|n| *n += 1);
/// let stats = domain.stats().expect("tm domains count");
/// assert!(stats.total.commits >= 1);
/// assert!(SyncDomain::new(SyncMode::Locks).stats().is_none());
/// ```
#[derive(Clone)]
pub struct SyncDomain {
    engine: Option<Arc<TxEngine>>,
}

impl SyncDomain {
    /// A new domain; in [`SyncMode::Transactions`], with a new private engine.
    pub fn new(mode: SyncMode) -> Self {
        Self {
            engine: match mode {
                SyncMode::Locks => None,
                SyncMode::Transactions => Some(Arc::new(TxEngine::new())),
            },
        }
    }

    /// The domain's mode.
    pub fn mode(&self) -> SyncMode {
        if self.engine.is_some() {
            SyncMode::Transactions
        } else {
            SyncMode::Locks
        }
    }

    /// The private engine's statistics (commits, aborts, `retry` waits; per site:
    /// [`SITE_RUN_QUEUE`], [`SITE_TASK_COUNT`], and those given with `with_site`);
    /// `None` in [`SyncMode::Locks`].
    pub fn stats(&self) -> Option<lutra_stm::Stats> {
        self.engine.as_ref().map(|engine| engine.stats())
    }

    pub(crate) fn engine(&self) -> Option<&Arc<TxEngine>> {
        self.engine.as_ref()
    }
}

impl Default for SyncDomain {
    fn default() -> Self {
        Self::new(SyncMode::default())
    }
}

impl fmt::Debug for SyncDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncDomain")
            .field("mode", &self.mode())
            .finish_non_exhaustive()
    }
}

/// Panics when a blocking wait is attempted inside a user transaction's closure
/// (it would hold the transaction open, or never end).
fn ensure_may_block(operation: &str) {
    if let Err(error) = lutra_stm::ensure_may_block() {
        panic!("{operation}: {error}");
    }
}
