//! Transaction statistics: per descriptor (so per thread or task), per transaction
//! site, and in total.
//!
//! Counting costs one uncontended lock of the descriptor's own book at the end of each
//! attempt, and nothing at all when [`Config::stats`](crate::Config) is off.

use crate::abort::AbortReason;
use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

/// Counters of one site, one descriptor, or everything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Attempts begun (first attempts and restarts).
    pub starts: u64,
    /// Attempts committed.
    pub commits: u64,
    /// Attempts aborted, indexed by `AbortReason as usize` (retries are counted in
    /// [`Counters::retry_waits`], not here).
    pub aborts: [u64; AbortReason::COUNT],
    /// Times a transaction blocked in `retry`.
    pub retry_waits: u64,
    /// Irrevocable attempts committed.
    pub irrevocable_commits: u64,
    /// Most consecutive aborts before one commit.
    pub max_retries: u64,
    /// Time spent in attempts that aborted.
    pub wasted: Duration,
}

impl Counters {
    /// Aborts of every reason.
    pub fn total_aborts(&self) -> u64 {
        self.aborts.iter().sum()
    }

    /// Aborts of one reason.
    pub fn aborts_for(&self, reason: AbortReason) -> u64 {
        self.aborts[reason as usize]
    }

    /// Aborted attempts per started attempt (0 when nothing started).
    pub fn abort_rate(&self) -> f64 {
        if self.starts == 0 {
            0.0
        } else {
            self.total_aborts() as f64 / self.starts as f64
        }
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &Counters) {
        self.starts += other.starts;
        self.commits += other.commits;
        for (mine, theirs) in self.aborts.iter_mut().zip(other.aborts) {
            *mine += theirs;
        }
        self.retry_waits += other.retry_waits;
        self.irrevocable_commits += other.irrevocable_commits;
        self.max_retries = self.max_retries.max(other.max_retries);
        self.wasted += other.wasted;
    }
}

impl fmt::Display for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "starts {} commits {} aborts {}",
            self.starts,
            self.commits,
            self.total_aborts()
        )?;
        for reason in AbortReason::ALL {
            let count = self.aborts_for(reason);
            if count > 0 {
                write!(f, " {}={}", reason.name(), count)?;
            }
        }
        write!(
            f,
            " retry_waits {} wasted {:?}",
            self.retry_waits, self.wasted
        )
    }
}

/// The counters one descriptor keeps: a total and one per site.
#[derive(Clone, Debug, Default)]
pub(crate) struct StatsBook {
    pub(crate) total: Counters,
    pub(crate) by_site: HashMap<u32, Counters>,
}

impl StatsBook {
    pub(crate) fn record(&mut self, site: u32, change: impl Fn(&mut Counters)) {
        change(&mut self.total);
        change(self.by_site.entry(site).or_default());
    }

    pub(crate) fn merge(&mut self, other: &StatsBook) {
        self.total.merge(&other.total);
        for (site, counters) in &other.by_site {
            self.by_site.entry(*site).or_default().merge(counters);
        }
    }
}

/// A snapshot of an engine's statistics.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Everything, all descriptors together.
    pub total: Counters,
    /// Per transaction site (the id given with [`TxOptions::site`](crate::TxOptions)).
    pub by_site: HashMap<u32, Counters>,
    /// Per descriptor slot (one per thread or task that ran transactions; a slot is
    /// reused after its descriptor is dropped, and keeps accumulating).
    pub by_descriptor: Vec<(usize, Counters)>,
}
