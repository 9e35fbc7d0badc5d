//! A cheap clock for timing attempts (the statistics' wasted time).
//!
//! On x86-64 it reads the time-stamp counter (about a third of the cost of
//! `Instant::now` here), converted to time with a rate measured once against
//! `Instant`; elsewhere it is `Instant`.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A point in time, in ticks of the cheap clock.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stamp(u64);

impl Stamp {
    pub(crate) fn now() -> Self {
        Self(read_ticks())
    }

    pub(crate) fn elapsed(self) -> Duration {
        let ticks = read_ticks().saturating_sub(self.0);
        Duration::from_nanos((ticks as f64 * nanos_per_tick()) as u64)
    }
}

#[cfg(target_arch = "x86_64")]
fn read_ticks() -> u64 {
    // SAFETY: `rdtsc` is available on every x86-64 processor and has no
    // preconditions.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
fn read_ticks() -> u64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// The measured length of one tick, in nanoseconds.
fn nanos_per_tick() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        if cfg!(not(target_arch = "x86_64")) {
            return 1.0;
        }
        let (start, ticks) = (Instant::now(), read_ticks());
        while start.elapsed() < Duration::from_millis(2) {
            std::hint::spin_loop();
        }
        let elapsed = start.elapsed().as_nanos() as f64;
        elapsed / (read_ticks().saturating_sub(ticks)).max(1) as f64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_measure_sleeps() {
        let stamp = Stamp::now();
        std::thread::sleep(Duration::from_millis(20));
        let measured = stamp.elapsed();
        assert!(
            measured >= Duration::from_millis(15) && measured < Duration::from_secs(2),
            "{measured:?}"
        );
    }
}
