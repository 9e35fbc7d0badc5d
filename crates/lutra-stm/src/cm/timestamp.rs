//! Timestamp: the older transaction wins. Ages survive restarts, so every transaction
//! eventually becomes the oldest and commits (seed 003, Section 6).

use super::{ContentionManager, Resolution, TxView, ordered};

/// The older transaction kills the younger; the younger waits for the older.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timestamp;

impl ContentionManager for Timestamp {
    fn name(&self) -> &'static str {
        "timestamp"
    }

    fn resolve(&self, me: &TxView, other: &TxView) -> Resolution {
        ordered(me.seniority(other))
    }
}
