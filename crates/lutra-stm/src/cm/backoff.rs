//! Randomized exponential backoff: abort yourself, then wait a random time whose bound
//! doubles with every failed attempt, up to a cap.

use super::{ContentionManager, Resolution, TxView};
use std::time::Duration;

/// Abort yourself on every conflict; before restarting, wait a uniformly random time
/// in `[0, min(base · 2^attempts, cap))`.
#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    /// Bound of the first delay.
    pub base: Duration,
    /// Largest bound.
    pub cap: Duration,
}

impl Default for Backoff {
    /// 1 µs doubling up to 1 ms.
    fn default() -> Self {
        Self {
            base: Duration::from_micros(1),
            cap: Duration::from_millis(1),
        }
    }
}

impl ContentionManager for Backoff {
    fn name(&self) -> &'static str {
        "backoff"
    }

    fn resolve(&self, _me: &TxView, _other: &TxView) -> Resolution {
        Resolution::AbortSelf
    }

    fn restart_delay(&self, attempts: u32) -> Duration {
        let bound = self
            .base
            .saturating_mul(1u32 << attempts.min(20))
            .min(self.cap);
        let nanos = bound.as_nanos().max(1) as u64;
        Duration::from_nanos(fastrand::u64(0..nanos))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_and_stay_under_the_cap() {
        let backoff = Backoff::default();
        for attempts in 0..40 {
            assert!(backoff.restart_delay(attempts) < backoff.cap);
        }
        let early: Duration = (0..200).map(|_| backoff.restart_delay(1)).sum();
        let late: Duration = (0..200).map(|_| backoff.restart_delay(10)).sum();
        assert!(late > early * 10, "early {early:?} late {late:?}");
    }
}
