//! Transaction statistics: per descriptor (so per thread or task), per transaction
//! site, and in total.
//!
//! Each descriptor counts in its registry slot: totals in atomics that only the owner
//! writes (a plain load and store, no lock, no barrier), transactions with a non-zero
//! site also per site (lock-free for sites below 64, in a map under an uncontended
//! lock above). Nothing is counted when
//! [`Config::stats`](crate::Config) is off.
//!
//! # Invariants
//! - Only the descriptor owning a slot writes its counters; the slot changes owner only
//!   through the registry's lock.
//! - The counters of site 0 are the totals minus every other site's.

use crate::attempt::abort::AbortReason;
use crate::global::sync::{AtomicU64, Mutex, Ordering, lock};
use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;
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

/// How one attempt ended, for the counters.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Outcome {
    pub(crate) result: Result<(), AbortReason>,
    pub(crate) irrevocable: bool,
    /// Aborted attempts before this one, in the same transaction.
    pub(crate) aborts_before: u32,
    pub(crate) elapsed: Duration,
}

impl Counters {
    fn count(&mut self, outcome: &Outcome) {
        self.starts += 1;
        match outcome.result {
            Ok(()) => {
                self.commits += 1;
                self.irrevocable_commits += u64::from(outcome.irrevocable);
                self.max_retries = self.max_retries.max(u64::from(outcome.aborts_before));
            }
            Err(AbortReason::Retry) => self.retry_waits += 1,
            Err(reason) => {
                self.aborts[reason as usize] += 1;
                self.wasted += outcome.elapsed;
            }
        }
    }

    /// `self - other`, field by field, never below zero: a snapshot taken while
    /// transactions run reads a slot's total and its sites one after the other, so a
    /// transaction counted meanwhile may show in a site and not in the total.
    fn minus(mut self, other: &Counters) -> Counters {
        self.starts = self.starts.saturating_sub(other.starts);
        self.commits = self.commits.saturating_sub(other.commits);
        for (mine, theirs) in self.aborts.iter_mut().zip(other.aborts) {
            *mine = mine.saturating_sub(theirs);
        }
        self.retry_waits = self.retry_waits.saturating_sub(other.retry_waits);
        self.irrevocable_commits = self
            .irrevocable_commits
            .saturating_sub(other.irrevocable_commits);
        self.wasted = self.wasted.saturating_sub(other.wasted);
        self
    }
}

/// `Counters` in atomics written by one owner.
#[derive(Default)]
struct AtomicCounters {
    starts: AtomicU64,
    commits: AtomicU64,
    aborts: [AtomicU64; AbortReason::COUNT],
    retry_waits: AtomicU64,
    irrevocable_commits: AtomicU64,
    max_retries: AtomicU64,
    wasted_nanos: AtomicU64,
}

/// Adds `amount` to a counter only its owner writes.
fn bump(counter: &AtomicU64, amount: u64) {
    counter.store(counter.load(Ordering::Relaxed) + amount, Ordering::Relaxed);
}

impl AtomicCounters {
    fn count(&self, outcome: &Outcome) {
        bump(&self.starts, 1);
        match outcome.result {
            Ok(()) => {
                bump(&self.commits, 1);
                bump(&self.irrevocable_commits, u64::from(outcome.irrevocable));
                let retries = u64::from(outcome.aborts_before);
                if retries > self.max_retries.load(Ordering::Relaxed) {
                    self.max_retries.store(retries, Ordering::Relaxed);
                }
            }
            Err(AbortReason::Retry) => bump(&self.retry_waits, 1),
            Err(reason) => {
                bump(&self.aborts[reason as usize], 1);
                bump(&self.wasted_nanos, outcome.elapsed.as_nanos() as u64);
            }
        }
    }

    fn snapshot(&self) -> Counters {
        Counters {
            starts: self.starts.load(Ordering::Relaxed),
            commits: self.commits.load(Ordering::Relaxed),
            aborts: std::array::from_fn(|at| self.aborts[at].load(Ordering::Relaxed)),
            retry_waits: self.retry_waits.load(Ordering::Relaxed),
            irrevocable_commits: self.irrevocable_commits.load(Ordering::Relaxed),
            max_retries: self.max_retries.load(Ordering::Relaxed),
            wasted: Duration::from_nanos(self.wasted_nanos.load(Ordering::Relaxed)),
        }
    }
}

/// Sites below this have lock-free counters (allocated on a slot's first use of one);
/// larger site ids are counted in a map under the slot's lock.
const SMALL_SITES: usize = 64;

/// The counters kept in one registry slot.
#[derive(Default)]
pub(crate) struct SlotStats {
    total: AtomicCounters,
    small_sites: OnceLock<Box<[AtomicCounters]>>,
    sites: Mutex<HashMap<u32, Counters>>,
}

impl SlotStats {
    /// Counts one attempt of a transaction of `site` (owner only).
    pub(crate) fn count(&self, site: u32, outcome: &Outcome) {
        self.total.count(outcome);
        match site as usize {
            0 => {}
            small if small < SMALL_SITES => self.small_sites.get_or_init(|| {
                (0..SMALL_SITES)
                    .map(|_| AtomicCounters::default())
                    .collect()
            })[small]
                .count(outcome),
            _ => lock(&self.sites).entry(site).or_default().count(outcome),
        }
    }

    /// Every site's counters but site 0's.
    fn each_site(&self) -> Vec<(u32, Counters)> {
        let mut sites: Vec<(u32, Counters)> = lock(&self.sites)
            .iter()
            .map(|(site, c)| (*site, *c))
            .collect();
        if let Some(small) = self.small_sites.get() {
            sites.extend(
                small
                    .iter()
                    .enumerate()
                    .map(|(site, counters)| (site as u32, counters.snapshot()))
                    .filter(|(_, counters)| counters.starts > 0),
            );
        }
        sites
    }

    pub(crate) fn total(&self) -> Counters {
        self.total.snapshot()
    }

    /// Adds this slot's counters into `total` and `by_site`.
    pub(crate) fn add_to(&self, total: &mut Counters, by_site: &mut HashMap<u32, Counters>) {
        let mine = self.total();
        total.merge(&mine);
        let mut site_zero = mine;
        for (site, counters) in self.each_site() {
            by_site.entry(site).or_default().merge(&counters);
            site_zero = site_zero.minus(&counters);
        }
        if site_zero.starts > 0 {
            by_site.entry(0).or_default().merge(&site_zero);
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

#[cfg(test)]
mod tests {
    use super::Counters;

    /// A statistics snapshot taken while transactions ran panicked ("attempt to
    /// subtract with overflow") when a site had counted a commit the slot's total,
    /// read just before, had not.
    #[test]
    fn a_site_ahead_of_the_total_leaves_site_zero_empty() {
        let total = Counters {
            starts: 3,
            commits: 3,
            ..Counters::default()
        };
        let site = Counters {
            starts: 4,
            commits: 4,
            retry_waits: 1,
            ..Counters::default()
        };
        let rest = total.minus(&site);
        assert_eq!((rest.starts, rest.commits, rest.retry_waits), (0, 0, 0));
    }
}
