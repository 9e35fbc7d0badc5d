//! Aggressive: the transaction that meets a conflict kills the other one.

use super::{ContentionManager, Resolution, TxView};

/// Kill the holder on every conflict (tinySTM's `CM_AGGRESSIVE`). Can livelock under
/// heavy contention: two transactions may keep killing each other.
#[derive(Clone, Copy, Debug, Default)]
pub struct Aggressive;

impl ContentionManager for Aggressive {
    fn name(&self) -> &'static str {
        "aggressive"
    }

    fn resolve(&self, _me: &TxView, _other: &TxView) -> Resolution {
        Resolution::KillOther
    }
}
