//! The engine instance that runs the user transactions of one runtime: built from the
//! runtime's options (contention manager, scheduling policy), with statistics on, a
//! pool of transaction descriptors, the names of the transaction sites, and the
//! per-site summary that `lutra --stats` prints.
//!
//! # Invariants
//! - The engine never parks a worker thread: its parking ([`WorkerParking`]) only
//!   yields the OS thread, and the Lua driver never calls the blocking
//!   `wait_for_change` (a `retry` registers a waker and parks the process instead).
//!   Decisions of the policy's hooks that ask to wait or switch are acted on by the
//!   driver yielding its process (`driver.rs`).
//! - A descriptor in the pool holds no attempt; descriptors are taken per
//!   transaction, so at most as many exist as transactions in progress at once.

use crate::options::Options;
use lutra_stm::{Config, Counters, Parking, Stm, TxDescriptor, cm};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard};
use std::task::Waker;

/// The site of shared-table accesses made outside `lutra.atomic` (each its own
/// transaction).
pub(crate) const SINGLE_ACCESS_SITE: u32 = 1;

/// User transactions of one runtime.
pub(crate) struct Engine {
    pub(crate) stm: Stm,
    // Boxed: a descriptor moves between the pool, the driver and a process's context
    // at every transaction; moving a pointer is cheaper than moving the descriptor.
    #[allow(clippy::vec_box)]
    pool: Mutex<Vec<Box<TxDescriptor>>>,
    sites: Mutex<Sites>,
}

struct Sites {
    by_name: HashMap<String, u32>,
    names: Vec<String>,
}

/// Parking for an engine whose transactions run on scheduler workers inside Lua
/// calls: it never blocks the thread (see the module's invariants).
#[derive(Debug, Default)]
pub(crate) struct WorkerParking;

impl Parking for WorkerParking {
    fn waker(&self) -> Waker {
        crate::wakers::current_waker()
    }

    /// Never called by Lutra's driver; yields instead of blocking if it ever is
    /// (`park` may return spuriously).
    fn park(&self) {
        std::thread::yield_now();
    }

    fn yield_now(&self) {
        std::thread::yield_now();
    }
}

/// The variable that lowers (or raises) the engine's set limit
/// ([`Config::max_set_entries`]): a transaction past it runs its next attempt
/// irrevocable, so a small limit shows that path with small transactions.
pub(crate) const SET_LIMIT_VAR: &str = "LUTRA_STM_MAX_SET_ENTRIES";

/// [`SET_LIMIT_VAR`]'s value: a whole number of entries, at least 1. A value that is
/// not one is reported on standard error and ignored (the runtime starts with the
/// default limit).
fn set_limit_from_env() -> Option<usize> {
    let text = std::env::var(SET_LIMIT_VAR).ok()?;
    match text.trim().parse::<usize>() {
        Ok(entries) if entries > 0 => Some(entries),
        _ => {
            eprintln!(
                "lutra: {SET_LIMIT_VAR}={text:?} is not a set limit (a whole number of \
                 entries, at least 1): the default is used"
            );
            None
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Engine {
    /// The engine for a runtime with `options` whose scheduler has `workers` workers.
    /// Unknown manager or policy names fall back to the defaults (the `lutra` program
    /// checks the names before it starts a runtime).
    pub(crate) fn new(options: &Options, workers: usize) -> Self {
        let mut config = Config::default()
            .with_stats(true)
            .with_parking(std::sync::Arc::new(WorkerParking));
        let policy = options
            .policy
            .as_deref()
            .and_then(lutra_sched::policy::Policy::from_name);
        if let Some(policy) = policy {
            config = config.with_hooks(policy.hooks(workers));
            if policy == lutra_sched::policy::Policy::RestartProfile {
                config = config.with_manager(cm::Priority);
            }
        }
        if let Some(manager) = options.contention_manager.as_deref().and_then(cm::by_name) {
            config = config.with_shared_manager(manager);
        }
        if let Some(entries) = set_limit_from_env() {
            config = config.with_max_set_entries(entries);
        }
        let sites = Sites {
            by_name: HashMap::new(),
            names: vec!["(none)".into(), "shared-table access outside atomic".into()],
        };
        Self {
            stm: Stm::new(config),
            pool: Mutex::new(Vec::new()),
            sites: Mutex::new(sites),
        }
    }

    /// A descriptor with no attempt, from the pool or new.
    pub(crate) fn lease(&self) -> Result<Box<TxDescriptor>, lutra_stm::RegistryFull> {
        if let Some(desc) = lock(&self.pool).pop() {
            return Ok(desc);
        }
        TxDescriptor::new(&self.stm).map(Box::new)
    }

    /// Gives a descriptor back to the pool (rolling back an attempt left running).
    pub(crate) fn release(&self, mut desc: Box<TxDescriptor>) {
        desc.rollback(lutra_stm::AbortReason::Panic);
        lock(&self.pool).push(desc);
    }

    /// The site id of the transactions named `name` (`file.lua:12`).
    pub(crate) fn site(&self, name: &str) -> u32 {
        let mut sites = lock(&self.sites);
        if let Some(&id) = sites.by_name.get(name) {
            return id;
        }
        let id = u32::try_from(sites.names.len()).unwrap_or(u32::MAX);
        sites.names.push(name.to_owned());
        sites.by_name.insert(name.to_owned(), id);
        id
    }

    /// Commits, aborts and waits per site so far.
    pub(crate) fn stats(&self) -> TransactionStats {
        let stats = self.stm.stats();
        let names = lock(&self.sites).names.clone();
        let mut sites: Vec<SiteStats> = stats
            .by_site
            .iter()
            .map(|(&site, counters)| SiteStats {
                site,
                name: names
                    .get(site as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("site {site}")),
                counters: *counters,
            })
            .collect();
        sites.sort_by_key(|s| s.site);
        TransactionStats {
            sites,
            total: stats.total,
        }
    }
}

/// The transactions of one site: `lutra.atomic` calls from one function (named by
/// where it is defined), or the single accesses made outside `atomic`.
#[derive(Clone, Debug)]
pub struct SiteStats {
    /// The engine's site id.
    pub site: u32,
    /// `file.lua:line` of the function given to `lutra.atomic`, or what the site is.
    pub name: String,
    /// Starts, commits, aborts by reason, retry waits, irrevocable commits.
    pub counters: Counters,
}

/// The user transactions of a runtime so far (what `lutra --stats` prints).
#[derive(Clone, Debug, Default)]
pub struct TransactionStats {
    /// One entry per site that ran a transaction, by site id.
    pub sites: Vec<SiteStats>,
    /// Every transaction together.
    pub total: Counters,
}

impl fmt::Display for TransactionStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<44} {:>10} {:>10} {:>8} {:>8} {:>8}",
            "transaction site", "commits", "aborts", "abort%", "retries", "irrevoc"
        )?;
        let row = |f: &mut fmt::Formatter<'_>, name: &str, c: &Counters| {
            writeln!(
                f,
                "{:<44} {:>10} {:>10} {:>7.1}% {:>8} {:>8}",
                name,
                c.commits,
                c.total_aborts(),
                100.0 * c.abort_rate(),
                c.retry_waits,
                c.irrevocable_commits
            )
        };
        for site in &self.sites {
            row(f, &site.name, &site.counters)?;
        }
        row(f, "total", &self.total)
    }
}
