//! Running one transaction of the elided lock to its commit: seed 000's Fig. 1
//! (beginning a transaction, retrying, falling back) and the end of Fig. 2.
//!
//! # Protocol
//! 1. Elision off: take the lock ([`FallbackCause::NotElided`]).
//! 2. No other live thread: take the lock for `single_thread_length` yield points,
//!    ending early if another thread registers ([`FallbackCause::SingleThread`]).
//! 3. Set the length from the site (Fig. 3). If the lock is held, spin until it is
//!    released; if it stays held, take it ([`FallbackCause::LockBusy`]).
//! 4. Run speculative attempts; after each abort, the first one adjusting the site's
//!    length, ask the retry budget (`policy.rs`): run again, spin for the lock and run
//!    again (take the lock if it stays held), or take the lock.
//! 5. Under the lock, the transaction runs as an irrevocable software transaction with
//!    the same length (the paper keeps the length when it reverts to the GIL); it
//!    releases the lock when it commits.
//!
//! # Invariants
//! - Every transaction ends committed, speculatively or under the lock, and is counted
//!   once in its site's statistics, with every abort on the way.

use crate::global::backend::{Attempt, stm};
use crate::global::gil::{Inner, LiveThread};
use crate::global::length::SiteLength;
use crate::global::lock::Held;
use crate::global::policy::{AfterAbort, FallbackCause, RetryBudget};
use crate::global::section::Section;
use crate::global::stats::SiteStats;
use lutra_stm::{Abort, TxDescriptor};

/// What the steps of a transaction are allowed: how many, and whether to end early
/// when another thread becomes live (the single-thread shortcut).
pub(crate) struct Plan<'a> {
    pub(crate) length: u32,
    single_thread: Option<&'a Inner>,
}

impl Plan<'_> {
    /// Whether a transaction run by the single-thread shortcut should end at this
    /// yield point because another thread is live now.
    #[inline]
    pub(crate) fn others_arrived(&self) -> bool {
        self.single_thread.is_some_and(Inner::others_live)
    }
}

/// The steps of one transaction: run its steps on the section, as the plan allows.
pub(crate) type Steps<'b> = dyn FnMut(&mut Section<'_>, &Plan<'_>) -> Result<(), Abort> + 'b;

impl LiveThread {
    /// Runs one transaction beginning at yield-point `site` until it commits (see the
    /// module protocol).
    pub(crate) fn transaction(&mut self, site: u32, steps: &mut Steps<'_>) {
        let index = self.site_index(site);
        let mut run = Run {
            gil: &self.gil,
            desc: &mut self.desc,
            site,
            length: &self.sites[index].1,
            counts: SiteStats::default(),
        };
        run.until_commit(steps);
        self.stats.add(site, &run.counts);
    }
}

/// The split borrows of a live thread that one transaction needs.
struct Run<'t> {
    gil: &'t Inner,
    desc: &'t mut TxDescriptor,
    site: u32,
    length: &'t SiteLength,
    counts: SiteStats,
}

impl Run<'_> {
    fn until_commit(&mut self, steps: &mut Steps<'_>) {
        self.counts.transactions += 1;
        let config = &self.gil.config;
        if !config.elide {
            let length = self.length.begin(&config.length);
            return self.locked(FallbackCause::NotElided, length, false, steps);
        }
        if !self.gil.others_live() {
            let length = config.single_thread_length;
            return self.locked(FallbackCause::SingleThread, length, true, steps);
        }
        let length = self.length.begin(&config.length);
        let lock = &self.gil.lock;
        if lock.is_held() && !lock.spin_while_held(config.spin_rounds) {
            return self.locked(FallbackCause::LockBusy, length, false, steps);
        }
        self.speculate(length, steps);
    }

    /// Protocol step 4.
    fn speculate(&mut self, length: u32, steps: &mut Steps<'_>) {
        let gil = self.gil;
        let plan = Plan {
            length,
            single_thread: None,
        };
        let mut budget = RetryBudget::new(&gil.config);
        let mut previous = None;
        loop {
            let attempt = Attempt {
                desc: &mut *self.desc,
                lock: &gil.lock,
                site: self.site,
                previous,
            };
            let mut ran = 0;
            let outcome = gil.backend.0.speculate(attempt, &mut |section| {
                let outcome = steps(section, &plan);
                ran = section.steps();
                outcome
            });
            let aborted = match outcome {
                Ok(()) => {
                    self.counts.speculative_commits += 1;
                    self.counts.steps += u64::from(ran);
                    return;
                }
                Err(aborted) => aborted,
            };
            if self.counts.total_aborts() == 0 {
                self.length.first_abort(&gil.config.length);
            }
            self.counts.aborts[aborted.class as usize] += 1;
            previous = aborted.reason;
            let cause = match budget.after_abort(aborted.class) {
                AfterAbort::Retry => continue,
                AfterAbort::SpinThenRetry if gil.lock.spin_while_held(gil.config.spin_rounds) => {
                    continue;
                }
                AfterAbort::SpinThenRetry => FallbackCause::LockConflicts,
                AfterAbort::TakeLock(cause) => cause,
            };
            return self.locked(cause, length, false, steps);
        }
    }

    /// Protocol steps 1, 2 and 5.
    fn locked(&mut self, cause: FallbackCause, length: u32, single: bool, steps: &mut Steps<'_>) {
        let gil = self.gil;
        self.counts.fallbacks[cause as usize] += 1;
        let plan = Plan {
            length,
            single_thread: single.then_some(gil),
        };
        let _held = Held::acquire(&gil.lock, gil.config.spin_rounds);
        let mut ran = 0;
        // An irrevocable attempt does not abort: the loop only guards against a step
        // that aborts explicitly under the lock.
        while stm::run_attempt(
            Attempt {
                desc: &mut *self.desc,
                lock: &gil.lock,
                site: self.site,
                previous: None,
            },
            true,
            &*gil.backend.0,
            &mut |section| {
                let outcome = steps(section, &plan);
                ran = section.steps();
                outcome
            },
        )
        .is_err()
        {}
        self.counts.steps += u64::from(ran);
    }
}
