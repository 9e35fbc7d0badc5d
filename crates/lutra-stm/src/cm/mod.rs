//! Contention managers: who gives way when two transactions want the same location.
//!
//! The engine asks the manager only when it meets a location locked by another
//! transaction (reads are invisible, so a reader that is overtaken simply fails
//! validation later and never reaches a manager). The manager sees both sides through
//! [`TxView`] and answers with a [`Resolution`]. Irrevocable transactions are handled
//! by the engine before any manager is asked: they always win.
//!
//! | manager | file | rule |
//! |---------|------|------|
//! | [`Suicide`] | `suicide.rs` | abort yourself, restart at once |
//! | [`Backoff`] | `backoff.rs` | abort yourself, restart after a randomized exponential delay |
//! | [`Aggressive`] | `aggressive.rs` | kill the other |
//! | [`Timestamp`] | `timestamp.rs` | the older wins; the younger waits |
//! | [`SizeMatters`] | `size_matters.rs` | the larger read+write set wins, then the older |
//! | [`Priority`] | `priority.rs` | higher priority wins, then larger, then older (TxLinux's os_prio) |
//!
//! # Invariants
//! - The ordered managers compare keys that are fixed for a transaction's lifetime or
//!   broken by age and slot, so between any two transactions exactly one wins: the
//!   loser waits and the winner kills, hence no deadlock and no livelock.

mod aggressive;
mod backoff;
mod priority;
mod size_matters;
mod suicide;
mod timestamp;

pub use aggressive::Aggressive;
pub use backoff::Backoff;
pub use priority::Priority;
pub use size_matters::SizeMatters;
pub use suicide::Suicide;
pub use timestamp::Timestamp;

use std::cmp::Ordering;
use std::time::Duration;

/// What a contention manager can know about one side of a conflict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxView {
    /// Contention priority, fixed for the whole transaction (higher wins under
    /// [`Priority`]).
    pub priority: i64,
    /// Read-set plus write-set entries (as last published; may lag a little).
    pub size: usize,
    /// Global clock value when the transaction's first attempt began: smaller is older.
    /// Restarts keep it.
    pub age: u64,
    /// Registry slot of the descriptor: the last tie-breaker.
    pub slot: usize,
}

impl TxView {
    /// Age order: `Greater` when `self` is older (and so should win).
    pub fn seniority(&self, other: &TxView) -> Ordering {
        other.age.cmp(&self.age).then(other.slot.cmp(&self.slot))
    }
}

/// A contention manager's answer to a conflict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// Abort the asking transaction.
    AbortSelf,
    /// Doom the other transaction and wait for it to release the location.
    KillOther,
    /// Wait for the other transaction to finish, then look again. The asking
    /// transaction still aborts if it is itself killed meanwhile.
    Wait,
}

/// A pluggable contention manager.
///
/// # Example
/// ```
/// use lutra_stm::cm::{ContentionManager, Resolution, TxView};
///
/// /// Lets the transaction with the lower slot number win.
/// #[derive(Debug)]
/// struct LowSlotWins;
///
/// impl ContentionManager for LowSlotWins {
///     fn name(&self) -> &'static str { "low-slot" }
///     fn resolve(&self, me: &TxView, other: &TxView) -> Resolution {
///         if me.slot < other.slot { Resolution::KillOther } else { Resolution::Wait }
///     }
/// }
/// let stm = lutra_stm::Stm::new(lutra_stm::Config::default().with_manager(LowSlotWins));
/// assert_eq!(stm.config().manager.name(), "low-slot");
/// ```
pub trait ContentionManager: Send + Sync + std::fmt::Debug {
    /// A short name (`"suicide"`, `"backoff"`, …), as reported by statistics and
    /// `stm_get_parameter("contention_manager")`.
    fn name(&self) -> &'static str;

    /// Decides the conflict between `me` (the asking transaction) and `other` (which
    /// holds the location `me` needs).
    fn resolve(&self, me: &TxView, other: &TxView) -> Resolution;

    /// How long to wait before restarting after an abort caused by a conflict;
    /// `attempts` counts the aborted attempts so far (1 after the first).
    fn restart_delay(&self, attempts: u32) -> Duration {
        let _ = attempts;
        Duration::ZERO
    }
}

/// Resolution of the ordered managers: the greater side kills, the lesser waits.
fn ordered(order: Ordering) -> Resolution {
    match order {
        Ordering::Less => Resolution::Wait,
        _ => Resolution::KillOther,
    }
}

/// The managers by name, for configuration from strings (the C ABI, command lines).
///
/// Returns `None` for an unknown name. Accepted names: `suicide`, `backoff`,
/// `aggressive`, `timestamp`, `size_matters`, `priority`.
pub fn by_name(name: &str) -> Option<std::sync::Arc<dyn ContentionManager>> {
    use std::sync::Arc;
    let manager: Arc<dyn ContentionManager> = match name {
        "suicide" => Arc::new(Suicide),
        "backoff" => Arc::new(Backoff::default()),
        "aggressive" => Arc::new(Aggressive),
        "timestamp" => Arc::new(Timestamp),
        "size_matters" | "sizematters" => Arc::new(SizeMatters),
        "priority" | "os_prio" => Arc::new(Priority),
        _ => return None,
    };
    Some(manager)
}

/// The names accepted by [`by_name`], in the order benchmarks report them.
pub const NAMES: [&str; 6] = [
    "suicide",
    "backoff",
    "aggressive",
    "timestamp",
    "size_matters",
    "priority",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn view(priority: i64, size: usize, age: u64, slot: usize) -> TxView {
        TxView {
            priority,
            size,
            age,
            slot,
        }
    }

    /// For every ordered manager and every pair, exactly one side kills.
    #[test]
    fn ordered_managers_are_total_orders() {
        let views = [
            view(0, 1, 5, 0),
            view(0, 1, 5, 1),
            view(1, 1, 9, 2),
            view(0, 7, 9, 3),
            view(-3, 100, 1, 4),
        ];
        let managers: [&dyn ContentionManager; 3] = [&Timestamp, &SizeMatters, &Priority];
        for manager in managers {
            for a in &views {
                for b in &views {
                    if a.slot == b.slot {
                        continue;
                    }
                    let ab = manager.resolve(a, b);
                    let ba = manager.resolve(b, a);
                    assert_ne!(
                        ab,
                        ba,
                        "{} decided {a:?} vs {b:?} both ways {ab:?}",
                        manager.name()
                    );
                    assert!(matches!(ab, Resolution::KillOther | Resolution::Wait));
                }
            }
        }
    }

    #[test]
    fn every_name_resolves() {
        for name in NAMES {
            assert_eq!(by_name(name).unwrap().name(), name);
        }
        assert!(by_name("polite").is_none());
    }
}
