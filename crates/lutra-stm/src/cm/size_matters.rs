//! SizeMatters: the transaction with the larger read+write set wins, then the older
//! (Ramadan et al., the default policy of TxLinux's MetaTM; seed 003).

use super::{ContentionManager, Resolution, TxView, ordered};

/// The larger transaction kills the smaller; equal sizes fall back to age.
#[derive(Clone, Copy, Debug, Default)]
pub struct SizeMatters;

impl ContentionManager for SizeMatters {
    fn name(&self) -> &'static str {
        "size_matters"
    }

    fn resolve(&self, me: &TxView, other: &TxView) -> Resolution {
        ordered(me.size.cmp(&other.size).then(me.seniority(other)))
    }
}
