//! Per-site transaction length: seed 000's Fig. 3 (`set_transaction_length`,
//! `adjust_transaction_length`).
//!
//! A site is a yield point at which transactions begin. Its length starts at
//! [`Adaptive::initial`]; during a profiling period (the first
//! [`Adaptive::profiling_period`] transactions begun at the site since its last
//! adjustment) the first abort of each transaction is counted, and the abort that finds
//! more than [`Adaptive::threshold`] already counted shortens the length
//! (×[`Adaptive::attenuation`], never below 1) and starts a new profiling period. After a
//! period without that many aborts the site is no longer watched: its counters are
//! neither written nor read again, so a steady state costs one shared load per
//! transaction (the paper's reason for the period, Section IV.C.3).
//!
//! # Protocol
//! 1. `begin` (Fig. 3 lines 1-10): returns the length; while `started ≤ period` it
//!    counts the transaction (`started` stops at `period + 1`).
//! 2. `first_abort` (lines 11-24), on the first abort of a transaction begun at the
//!    site: if the length is above 1 and `started ≤ period`, either count the abort
//!    (`aborts ≤ threshold`) or shorten the length and reset both counters.
//!
//! Fig. 3 counts up to `period` in line 8 and compares with `≤ period` in line 14,
//! which read literally would watch a site for ever; here the count stops one higher,
//! so the period covers exactly the transactions 1 to `period`.
//!
//! # Invariants
//! - `1 ≤ length ≤ initial`; the length only shrinks.
//! - Counters are updated without locks, as in the paper (threads may race on an
//!   update and lose a count); a shortening is a CAS on the length, so two threads
//!   that race on one shorten it once.

use crate::global::config::{Adaptive, LengthPolicy};
use std::sync::atomic::{AtomicU32, Ordering};

/// The length state of one yield-point site.
#[derive(Debug)]
pub(crate) struct SiteLength {
    length: AtomicU32,
    started: AtomicU32,
    aborts: AtomicU32,
}

impl SiteLength {
    /// A site not yet used: its length is the policy's initial one.
    pub(crate) fn new(policy: &LengthPolicy) -> Self {
        let initial = match policy {
            LengthPolicy::Fixed(length) => *length,
            LengthPolicy::Dynamic(adaptive) => adaptive.initial,
        };
        Self {
            length: AtomicU32::new(initial),
            started: AtomicU32::new(0),
            aborts: AtomicU32::new(0),
        }
    }

    /// The current length.
    pub(crate) fn current(&self) -> u32 {
        // ORDERING: a hint shared by racing threads; nothing else depends on it.
        self.length.load(Ordering::Relaxed)
    }

    /// Protocol step 1: the length of a transaction beginning at this site.
    #[inline]
    pub(crate) fn begin(&self, policy: &LengthPolicy) -> u32 {
        match policy {
            LengthPolicy::Fixed(length) => *length,
            LengthPolicy::Dynamic(adaptive) => {
                let length = self.current();
                if self.started.load(Ordering::Relaxed) <= adaptive.profiling_period {
                    self.started.fetch_add(1, Ordering::Relaxed);
                }
                length
            }
        }
    }

    /// Protocol step 2: the first abort of a transaction begun at this site.
    pub(crate) fn first_abort(&self, policy: &LengthPolicy) {
        let LengthPolicy::Dynamic(adaptive) = policy else {
            return;
        };
        let length = self.current();
        if length <= 1 || self.started.load(Ordering::Relaxed) > adaptive.profiling_period {
            return;
        }
        let aborts = self.aborts.load(Ordering::Relaxed);
        if aborts <= adaptive.threshold {
            self.aborts.store(aborts + 1, Ordering::Relaxed);
        } else {
            self.shorten(adaptive, length);
        }
    }

    fn shorten(&self, adaptive: &Adaptive, length: u32) {
        let shorter = adaptive.shorten(length);
        if self
            .length
            .compare_exchange(length, shorter, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            self.started.store(0, Ordering::Relaxed);
            self.aborts.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Begins `count` transactions at `site`, the first `aborting` of them aborting.
    fn run(site: &SiteLength, count: u32, aborting: u32) {
        for index in 0..count {
            site.begin(&LengthPolicy::DYNAMIC);
            if index < aborting {
                site.first_abort(&LengthPolicy::DYNAMIC);
            }
        }
    }

    #[test]
    fn fifth_abort_in_a_period_shortens() {
        let site = SiteLength::new(&LengthPolicy::DYNAMIC);
        run(&site, 4, 4);
        assert_eq!(site.current(), 255);
        run(&site, 1, 1);
        assert_eq!(site.current(), 191);
    }

    #[test]
    fn a_site_that_always_aborts_reaches_one_and_stays() {
        let site = SiteLength::new(&LengthPolicy::DYNAMIC);
        let mut seen = vec![site.current()];
        for _ in 0..200 {
            run(&site, 1, 1);
            if *seen.last().unwrap() != site.current() {
                seen.push(site.current());
            }
        }
        assert_eq!(
            seen,
            [
                255, 191, 143, 107, 80, 60, 45, 33, 24, 18, 13, 9, 6, 4, 3, 2, 1
            ]
        );
    }

    #[test]
    fn no_monitoring_after_the_profiling_period() {
        let site = SiteLength::new(&LengthPolicy::DYNAMIC);
        run(&site, 300, 3);
        run(&site, 1, 0);
        run(&site, 100, 100);
        assert_eq!(
            site.current(),
            255,
            "aborts after transaction 300 are ignored"
        );
    }

    #[test]
    fn the_three_hundredth_transaction_is_still_watched() {
        let site = SiteLength::new(&LengthPolicy::DYNAMIC);
        run(&site, 299, 0);
        // Transaction 300: watched; four aborts counted already would make its abort
        // the fifth. Count four first, then the 300th aborts.
        site.aborts.store(4, Ordering::Relaxed);
        run(&site, 1, 1);
        assert_eq!(site.current(), 191);
    }

    #[test]
    fn fixed_lengths_never_change() {
        let policy = LengthPolicy::Fixed(16);
        let site = SiteLength::new(&policy);
        for _ in 0..50 {
            assert_eq!(site.begin(&policy), 16);
            site.first_abort(&policy);
        }
        assert_eq!(site.current(), 16);
    }
}
