//! Suicide: the transaction that meets a conflict aborts itself and restarts at once.

use super::{ContentionManager, Resolution, TxView};

/// Abort yourself on every conflict; restart immediately (tinySTM's `CM_SUICIDE`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Suicide;

impl ContentionManager for Suicide {
    fn name(&self) -> &'static str {
        "suicide"
    }

    fn resolve(&self, _me: &TxView, _other: &TxView) -> Resolution {
        Resolution::AbortSelf
    }
}
