//! Statistics of the elided global lock, per yield-point site: transactions begun,
//! steps run, speculative commits, aborts by class, fallbacks to the lock by cause,
//! and the site's current length.
//!
//! # Invariants
//! - Each live thread counts in its own table, locked only by itself and by a reader
//!   taking a snapshot (so the lock is uncontended); a thread's table is added to the
//!   retired totals when it unregisters.
//! - `transactions = speculative_commits + fallbacks()` for every site once no
//!   transaction is running.

use crate::global::policy::{AbortClass, FallbackCause};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};

/// Counters of one site (or of every site, in [`GilStats::total`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteStats {
    /// Transactions begun at the site (each ends by a speculative commit or under the
    /// lock).
    pub transactions: u64,
    /// Steps completed by committed transactions.
    pub steps: u64,
    /// Transactions committed speculatively.
    pub speculative_commits: u64,
    /// Aborted speculative attempts, indexed by `AbortClass as usize`.
    pub aborts: [u64; AbortClass::COUNT],
    /// Transactions run under the lock, indexed by `FallbackCause as usize`.
    pub fallbacks: [u64; FallbackCause::COUNT],
    /// The site's transaction length when the snapshot was taken (0 in
    /// [`GilStats::total`]).
    pub length: u32,
}

impl SiteStats {
    /// Aborts of one class.
    pub fn aborts_of(&self, class: AbortClass) -> u64 {
        self.aborts[class as usize]
    }

    /// Aborts of every class.
    pub fn total_aborts(&self) -> u64 {
        self.aborts.iter().sum()
    }

    /// Fallbacks for one cause.
    pub fn fallbacks_for(&self, cause: FallbackCause) -> u64 {
        self.fallbacks[cause as usize]
    }

    /// Transactions run under the lock, for every cause.
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks.iter().sum()
    }

    /// Adds `other`'s counters to these (the length is left alone).
    pub fn merge(&mut self, other: &SiteStats) {
        self.transactions += other.transactions;
        self.steps += other.steps;
        self.speculative_commits += other.speculative_commits;
        for (mine, theirs) in self.aborts.iter_mut().zip(other.aborts) {
            *mine += theirs;
        }
        for (mine, theirs) in self.fallbacks.iter_mut().zip(other.fallbacks) {
            *mine += theirs;
        }
    }
}

impl fmt::Display for SiteStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "transactions {} steps {} speculative {} aborts",
            self.transactions, self.steps, self.speculative_commits
        )?;
        for class in AbortClass::ALL {
            write!(f, " {}={}", class.name(), self.aborts_of(class))?;
        }
        write!(f, " fallbacks")?;
        for cause in FallbackCause::ALL {
            write!(f, " {}={}", cause.name(), self.fallbacks_for(cause))?;
        }
        write!(f, " length {}", self.length)
    }
}

/// A snapshot of a lock's statistics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GilStats {
    /// Per yield-point site.
    pub by_site: BTreeMap<u32, SiteStats>,
    /// Every site together.
    pub total: SiteStats,
}

/// Counters per site, for one thread or for the retired threads.
pub(crate) type SiteTable = BTreeMap<u32, SiteStats>;

/// One thread's table (see the invariants).
#[derive(Debug, Default)]
pub(crate) struct ThreadStats(Mutex<SiteTable>);

impl ThreadStats {
    /// Adds `section` to the counters of `site`.
    pub(crate) fn add(&self, site: u32, section: &SiteStats) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(site)
            .or_default()
            .merge(section);
    }

    /// Adds every counter of this thread to `into`.
    pub(crate) fn add_to(&self, into: &mut SiteTable) {
        for (site, stats) in self.0.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            into.entry(*site).or_default().merge(stats);
        }
    }
}
