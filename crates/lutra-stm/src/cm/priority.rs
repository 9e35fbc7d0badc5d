//! Priority (TxLinux's os_prio, seed 003 Section 6): higher priority wins, then the
//! larger transaction, then the older. Priorities are fixed when a transaction starts,
//! so `(priority, size, age)` is a total order and the policy neither deadlocks nor
//! livelocks.

use super::{ContentionManager, Resolution, TxView, ordered};

/// The transaction with the higher `(priority, size, age)` kills; the other waits.
#[derive(Clone, Copy, Debug, Default)]
pub struct Priority;

impl ContentionManager for Priority {
    fn name(&self) -> &'static str {
        "priority"
    }

    fn resolve(&self, me: &TxView, other: &TxView) -> Resolution {
        let order = me
            .priority
            .cmp(&other.priority)
            .then(me.size.cmp(&other.size))
            .then(me.seniority(other));
        ordered(order)
    }
}
