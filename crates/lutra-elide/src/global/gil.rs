//! The elided global lock and its live threads: registration (the live-thread count
//! behind the single-thread shortcut), per-site lengths, statistics.
//!
//! # Invariants
//! - `live` is the number of [`LiveThread`]s alive for this lock.
//! - A site's length state is created once, on first use, and shared by every thread.
//! - A live thread's statistics table is listed in `threads` until it unregisters,
//!   then added to `retired`.

use crate::global::backend::Backend;
use crate::global::config::GilConfig;
use crate::global::length::SiteLength;
use crate::global::lock::LockWord;
use crate::global::stats::{GilStats, SiteTable, ThreadStats};
use lutra_stm::{RegistryFull, Stm, TxDescriptor};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

pub(crate) struct Inner {
    pub(crate) stm: Stm,
    pub(crate) config: GilConfig,
    pub(crate) backend: Backend,
    pub(crate) lock: LockWord,
    live: crossbeam_utils::CachePadded<AtomicUsize>,
    sites: RwLock<HashMap<u32, Arc<SiteLength>>>,
    threads: Mutex<Vec<Arc<ThreadStats>>>,
    retired: Mutex<SiteTable>,
}

impl Inner {
    /// Whether another thread than the caller is live (Fig. 1 line 2, Fig. 2 line 9).
    #[inline]
    pub(crate) fn others_live(&self) -> bool {
        // ORDERING: a hint; a thread registering meanwhile is seen at a later yield
        // point, and exclusion never depends on it (the shortcut takes the lock).
        self.live.load(Ordering::Relaxed) > 1
    }

    fn site(&self, site: u32) -> Arc<SiteLength> {
        if let Some(found) = self
            .sites
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&site)
        {
            return found.clone();
        }
        self.sites
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(site)
            .or_insert_with(|| Arc::new(SiteLength::new(&self.config.length)))
            .clone()
    }
}

/// A global lock whose critical sections run as transactions (seed 000), falling back
/// to the lock; cheap to clone (clones share the lock).
///
/// Threads use it through a [`LiveThread`] each ([`GlobalLock::register`]).
///
/// ```
/// use lutra_elide::global::{GilConfig, GlobalLock, Step};
/// use lutra_stm::{Stm, TVar};
/// let gil = GlobalLock::new(&Stm::default(), GilConfig::default());
/// let counter = TVar::new(0u64);
/// let mut me = gil.register().unwrap();
/// let steps = me.run_steps(1, 0u32, |section, done| {
///     section.modify(&counter, |n| n + 1)?;
///     *done += 1;
///     Ok(if *done == 1000 { Step::Done(*done) } else { Step::Continue })
/// });
/// assert_eq!(steps, 1000);
/// assert_eq!(me.run(2, |section| section.read(&counter)), 1000);
/// ```
#[derive(Clone)]
pub struct GlobalLock {
    pub(crate) inner: Arc<Inner>,
}

impl GlobalLock {
    /// A lock over `stm`'s transactions, with software speculation.
    ///
    /// # Panics
    /// If `config` is invalid ([`GilConfig::validate`]).
    pub fn new(stm: &Stm, config: GilConfig) -> Self {
        Self::with_backend(stm, config, Backend::stm())
    }

    /// A lock whose speculative transactions run on `backend` (the fallback is always
    /// an irrevocable transaction of `stm`).
    ///
    /// # Panics
    /// If `config` is invalid ([`GilConfig::validate`]).
    pub fn with_backend(stm: &Stm, config: GilConfig, backend: Backend) -> Self {
        config.validate();
        let inner = Inner {
            lock: LockWord::new(stm.config().parking.clone()),
            stm: stm.clone(),
            config,
            backend,
            live: crossbeam_utils::CachePadded::new(AtomicUsize::new(0)),
            sites: RwLock::default(),
            threads: Mutex::default(),
            retired: Mutex::default(),
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Registers the calling thread (or task): it counts as live until the returned
    /// handle is dropped. While only one thread is live, its sections take the lock
    /// without speculating.
    ///
    /// # Errors
    /// [`RegistryFull`] when the engine has no descriptor left for it.
    pub fn register(&self) -> Result<LiveThread, RegistryFull> {
        let desc = TxDescriptor::new(&self.inner.stm)?;
        let stats = Arc::new(ThreadStats::default());
        self.inner
            .threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(stats.clone());
        self.inner.live.fetch_add(1, Ordering::Relaxed);
        Ok(LiveThread {
            gil: self.inner.clone(),
            desc,
            sites: Vec::new(),
            stats,
        })
    }

    /// Threads registered now.
    pub fn live_threads(&self) -> usize {
        self.inner.live.load(Ordering::Relaxed)
    }

    /// The configuration.
    pub fn config(&self) -> &GilConfig {
        &self.inner.config
    }

    /// The backend's name (`"stm"`, `"rtm"`, `"fake"`).
    pub fn backend(&self) -> &'static str {
        self.inner.backend.name()
    }

    /// The engine the lock runs on.
    pub fn stm(&self) -> &Stm {
        &self.inner.stm
    }

    /// Whether a thread holds the lock now (a fallback or a single-thread section).
    pub fn is_held(&self) -> bool {
        self.inner.lock.is_held()
    }

    /// The length transactions beginning at `site` take now (the initial length for a
    /// site not used yet).
    pub fn length(&self, site: u32) -> u32 {
        self.inner.site(site).current()
    }

    /// A snapshot of the statistics, per site and in total (counts of running threads
    /// included as of their last finished transaction).
    pub fn stats(&self) -> GilStats {
        let mut table = self
            .inner
            .retired
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for thread in self
            .inner
            .threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            thread.add_to(&mut table);
        }
        let mut stats = GilStats::default();
        for (site, mut counters) in table {
            stats.total.merge(&counters);
            counters.length = self.length(site);
            stats.by_site.insert(site, counters);
        }
        stats
    }
}

impl fmt::Debug for GlobalLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlobalLock")
            .field("backend", &self.backend())
            .field("config", &self.inner.config)
            .field("live", &self.live_threads())
            .finish_non_exhaustive()
    }
}

/// A thread (or task) registered with a [`GlobalLock`]: runs critical sections
/// ([`LiveThread::run`]) and step loops ([`LiveThread::run_steps`]).
///
/// It owns the thread's transaction descriptor and statistics, never a thread-local:
/// it may move to another thread between sections. Dropping it unregisters.
///
/// The lock is not reentrant: a step must not run a section of the same lock through
/// another `LiveThread` (under the lock, that section would wait for itself).
pub struct LiveThread {
    pub(crate) gil: Arc<Inner>,
    pub(crate) desc: TxDescriptor,
    /// Sites used by this thread, in order of first use.
    pub(crate) sites: Vec<(u32, Arc<SiteLength>)>,
    pub(crate) stats: Arc<ThreadStats>,
}

impl LiveThread {
    /// The index in `sites` of `site`'s length state, looked up in the lock's table
    /// on the thread's first use of the site.
    pub(crate) fn site_index(&mut self, site: u32) -> usize {
        if let Some(at) = self.sites.iter().position(|(id, _)| *id == site) {
            return at;
        }
        self.sites.push((site, self.gil.site(site)));
        self.sites.len() - 1
    }

    /// The lock this thread is registered with.
    pub fn lock(&self) -> GlobalLock {
        GlobalLock {
            inner: self.gil.clone(),
        }
    }
}

impl fmt::Debug for LiveThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveThread")
            .field("slot", &self.desc.slot())
            .finish_non_exhaustive()
    }
}

impl Drop for LiveThread {
    fn drop(&mut self) {
        self.gil.live.fetch_sub(1, Ordering::Relaxed);
        let mut threads = self
            .gil
            .threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        threads.retain(|thread| !Arc::ptr_eq(thread, &self.stats));
        self.stats.add_to(
            &mut self
                .gil
                .retired
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
    }
}
