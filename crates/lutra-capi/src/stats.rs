//! Statistics under tinySTM's names (`stm_get_stats`, and `mod_stats.h`'s
//! `stm_get_global_stats` / `stm_get_local_stats`).
//!
//! Per-thread counters are kept here, by tinySTM abort code, for the transactions the
//! calling thread ran since `stm_init_thread`. The global counters sum every thread's
//! `Tally` since `stm_init`: the live threads' and what exited threads left. They
//! do not need the engine's statistics (`LUTRA_STM_STATS`), which are off unless
//! asked for.
//!
//! | name | scope | written as |
//! |------|-------|------------|
//! | `global_nb_commits`, `global_nb_aborts`, `global_max_retries` | all threads | `unsigned long` |
//! | `nb_commits`, `nb_aborts`, `max_retries` | this thread | `unsigned long` |
//! | `nb_aborts_locked_read`, `nb_aborts_locked_write` | this thread | `unsigned long` |
//! | `nb_aborts_validate_read`, `nb_aborts_validate_write`, `nb_aborts_validate_commit` | this thread | `unsigned long` |
//! | `nb_aborts_killed`, `nb_aborts_irrevocable`, `nb_aborts_extend_ws`, `nb_aborts_explicit`, `nb_aborts_other` | this thread | `unsigned long` |
//! | `read_only` | this thread's current (or last) transaction | `unsigned int` |
//!
//! # Invariants
//! - `nb_aborts` is the sum of the per-reason counters.
//! - A `Tally` is in `TALLIES.live` from its thread's registration until its
//!   `LocalStats` is dropped, which moves its counts to `TALLIES.exited` under the
//!   same lock: a global sum never counts a thread twice nor loses one.
//! - Only the owning thread writes a tally (relaxed loads and stores, no
//!   read-modify-write): other threads only read it.

use crate::boundary;
use crate::engine;
use crate::status::{
    CapiError, CapiResult, STM_ABORT_EXPLICIT, STM_ABORT_EXTEND_WS, STM_ABORT_IRREVOCABLE,
    STM_ABORT_KILLED, STM_ABORT_OTHER, STM_ABORT_VAL_READ, STM_ABORT_VAL_WRITE, STM_ABORT_VALIDATE,
    STM_ABORT_WR_CONFLICT, STM_ABORT_WW_CONFLICT,
};
use crate::thread::with_thread;
use std::ffi::{CStr, c_char, c_int, c_uint, c_ulong, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// A thread's counters behind the global names: written by the thread alone, read
/// by any (see the module invariants).
#[derive(Debug, Default)]
pub(crate) struct Tally {
    commits: AtomicU64,
    aborts: AtomicU64,
    /// Most aborts before one commit.
    max_retries: AtomicU64,
}

impl Tally {
    /// Adds `by` to the owner's `counter`.
    #[inline(always)]
    fn bump(counter: &AtomicU64, by: u64) {
        counter.store(counter.load(Ordering::Relaxed) + by, Ordering::Relaxed);
    }

    fn read(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// Commits, aborts and the most retries, summed.
#[derive(Clone, Copy, Debug, Default)]
struct Totals {
    commits: u64,
    aborts: u64,
    max_retries: u64,
}

impl Totals {
    fn add(&mut self, tally: &Tally) {
        self.commits += Tally::read(&tally.commits);
        self.aborts += Tally::read(&tally.aborts);
        self.max_retries = self.max_retries.max(Tally::read(&tally.max_retries));
    }
}

/// Every registered thread's tally, and what exited threads left since `stm_init`.
pub(crate) struct Tallies {
    live: Vec<Arc<Tally>>,
    exited: Totals,
}

impl Tallies {
    /// Every thread's counts: the live ones' and the exited ones'.
    fn total(&self) -> Totals {
        let mut total = self.exited;
        for tally in &self.live {
            total.add(tally);
        }
        total
    }

    /// Moves an exiting thread's counts from `live` to `exited`.
    fn retire(&mut self, tally: &Arc<Tally>) {
        self.live.retain(|live| !Arc::ptr_eq(live, tally));
        self.exited.add(tally);
    }
}

static TALLIES: Mutex<Tallies> = Mutex::new(Tallies {
    live: Vec::new(),
    exited: Totals {
        commits: 0,
        aborts: 0,
        max_retries: 0,
    },
});

fn tallies() -> std::sync::MutexGuard<'static, Tallies> {
    TALLIES.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The lock of the threads' counts, held across a `fork` (`fork.rs`).
pub(crate) fn hold_for_fork() -> std::sync::MutexGuard<'static, Tallies> {
    tallies()
}

/// Forgets what exited threads left: a new engine starts counting from zero
/// (`stm_init`; no thread is registered then).
pub(crate) fn reset_global() {
    tallies().exited = Totals::default();
}

/// The counters of one thread.
#[derive(Debug)]
pub(crate) struct LocalStats {
    /// Commits, aborts and most retries, also counted in the global names.
    tally: Arc<Tally>,
    /// Explicit aborts (`stm_abort`, cancelled `stm_atomically`).
    pub(crate) explicit: u64,
    /// Other aborts by the detail of their code (`code >> 8 & 0xF`).
    pub(crate) by_detail: [u64; 16],
    /// Aborts since the current transaction began.
    pub(crate) consecutive_aborts: u64,
}

impl LocalStats {
    /// A registering thread's counters, all zero, counted in the global names.
    pub(crate) fn new() -> Self {
        let tally = Arc::new(Tally::default());
        tallies().live.push(tally.clone());
        Self {
            tally,
            explicit: 0,
            by_detail: [0; 16],
            consecutive_aborts: 0,
        }
    }

    /// Counts a commit of a transaction that had no abort before it.
    #[inline(always)]
    pub(crate) fn count_first_time_commit(&mut self) {
        debug_assert_eq!(self.consecutive_aborts, 0);
        Tally::bump(&self.tally.commits, 1);
    }

    pub(crate) fn count_abort(&mut self, code: c_int) {
        Tally::bump(&self.tally.aborts, 1);
        self.consecutive_aborts += 1;
        if code & STM_ABORT_EXPLICIT != 0 {
            self.explicit += 1;
        } else {
            self.by_detail[detail(code)] += 1;
        }
    }

    /// The running transaction is about to be counted as committed: a run of aborts
    /// before it counts for `max_retries`, and the next transaction starts a new one.
    #[inline]
    pub(crate) fn close_abort_run(&mut self) {
        if self.consecutive_aborts != 0 {
            self.end_abort_run();
        }
    }

    /// [`LocalStats::close_abort_run`] for a transaction that aborted before it
    /// committed.
    #[cold]
    #[inline(never)]
    fn end_abort_run(&mut self) {
        if self.consecutive_aborts > Tally::read(&self.tally.max_retries) {
            self.tally
                .max_retries
                .store(self.consecutive_aborts, Ordering::Relaxed);
        }
        self.consecutive_aborts = 0;
    }

    fn of_code(&self, code: c_int) -> u64 {
        self.by_detail[detail(code)]
    }
}

impl Drop for LocalStats {
    fn drop(&mut self) {
        tallies().retire(&self.tally);
    }
}

fn detail(code: c_int) -> usize {
    ((code >> 8) & 0xF) as usize
}

/// A counter of this thread, by tinySTM name.
fn local_counter(stats: &LocalStats, name: &str) -> Option<u64> {
    Some(match name {
        "nb_commits" => Tally::read(&stats.tally.commits),
        "nb_aborts" => Tally::read(&stats.tally.aborts),
        "max_retries" => Tally::read(&stats.tally.max_retries),
        "nb_aborts_locked_read" => stats.of_code(STM_ABORT_WR_CONFLICT),
        "nb_aborts_locked_write" => stats.of_code(STM_ABORT_WW_CONFLICT),
        "nb_aborts_validate_read" => stats.of_code(STM_ABORT_VAL_READ),
        "nb_aborts_validate_write" => stats.of_code(STM_ABORT_VAL_WRITE),
        "nb_aborts_validate_commit" => stats.of_code(STM_ABORT_VALIDATE),
        "nb_aborts_killed" => stats.of_code(STM_ABORT_KILLED),
        "nb_aborts_irrevocable" => stats.of_code(STM_ABORT_IRREVOCABLE),
        "nb_aborts_extend_ws" => stats.of_code(STM_ABORT_EXTEND_WS),
        "nb_aborts_other" => stats.of_code(STM_ABORT_OTHER),
        "nb_aborts_explicit" => stats.explicit,
        _ => return None,
    })
}

/// A counter of every thread, by tinySTM name.
fn global_counter(name: &str) -> CapiResult<Option<u64>> {
    let known = matches!(
        name,
        "global_nb_commits" | "global_nb_aborts" | "global_max_retries"
    );
    if !known {
        return Ok(None);
    }
    engine::current()?;
    let total = tallies().total();
    Ok(Some(match name {
        "global_nb_commits" => total.commits,
        "global_nb_aborts" => total.aborts,
        _ => total.max_retries,
    }))
}

/// Which names a lookup accepts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Global,
    Local,
    Both,
}

/// Writes the statistic `name` to `val`; `Ok(1)` when found.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `val` is NULL or points to writable
/// memory of the statistic's type (see the module table).
unsafe fn lookup(name: *const c_char, val: *mut c_void, scope: Scope) -> CapiResult<c_int> {
    if name.is_null() || val.is_null() {
        return Err(CapiError::invalid("name and val must not be NULL"));
    }
    // SAFETY: `name` is a NUL-terminated string (caller's contract).
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    if scope != Scope::Local
        && let Some(value) = global_counter(&name)?
    {
        // SAFETY: `val` points to an `unsigned long` for global names (contract).
        unsafe { val.cast::<c_ulong>().write(value as c_ulong) };
        return Ok(1);
    }
    if scope == Scope::Global {
        return Err(CapiError::invalid(format!("unknown statistic \"{name}\"")));
    }
    with_thread(|state| {
        if name == "read_only" {
            // SAFETY: `val` points to an `unsigned int` for "read_only" (contract).
            unsafe {
                val.cast::<c_uint>()
                    .write(c_uint::from(state.attributes().read_only))
            };
            return Ok(1);
        }
        let value = local_counter(&state.stats, &name)
            .ok_or_else(|| CapiError::invalid(format!("unknown statistic \"{name}\"")))?;
        // SAFETY: `val` points to an `unsigned long` for counters (contract).
        unsafe { val.cast::<c_ulong>().write(value as c_ulong) };
        Ok(1)
    })
}

/// tinySTM's `stm_get_stats`: writes the statistic `name` (global or of this thread,
/// see `mod_stats.h`) to `val`. Returns 1, or 0 on an unknown name, NULL arguments,
/// no engine (global names) or an unregistered thread (per-thread names), with the
/// thread's last error set.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string; `val` must be NULL or point to
/// writable memory of the statistic's type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_get_stats(name: *const c_char, val: *mut c_void) -> c_int {
    // SAFETY: forwarded contract.
    boundary::value(
        "stm_get_stats",
        |_| 0,
        || unsafe { lookup(name, val, Scope::Both) },
    )
}

/// tinySTM's `stm_get_local_stats` (`mod_stats.h`): as [`stm_get_stats`], for the
/// per-thread names only.
///
/// # Safety
/// As [`stm_get_stats`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_get_local_stats(name: *const c_char, val: *mut c_void) -> c_int {
    // SAFETY: forwarded contract.
    boundary::value(
        "stm_get_local_stats",
        |_| 0,
        || unsafe { lookup(name, val, Scope::Local) },
    )
}

/// tinySTM's `stm_get_global_stats` (`mod_stats.h`): as [`stm_get_stats`], for the
/// `global_*` names only. Needs no registered thread.
///
/// # Safety
/// As [`stm_get_stats`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_get_global_stats(name: *const c_char, val: *mut c_void) -> c_int {
    // SAFETY: forwarded contract.
    boundary::value(
        "stm_get_global_stats",
        |_| 0,
        || unsafe { lookup(name, val, Scope::Global) },
    )
}

/// tinySTM's `mod_stats_init`: statistics are always on in Lutra, so this does
/// nothing. May be called at any time.
#[unsafe(no_mangle)]
pub extern "C" fn mod_stats_init() {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{STM_ABORT_NO_RETRY, explicit_code};

    impl LocalStats {
        /// A commit as the C ABI counts one.
        fn count_commit(&mut self) {
            self.close_abort_run();
            self.count_first_time_commit();
        }
    }

    #[test]
    fn counts_by_tinystm_code() {
        let mut stats = LocalStats::new();
        stats.count_abort(STM_ABORT_VAL_READ);
        stats.count_abort(STM_ABORT_WW_CONFLICT);
        stats.count_abort(explicit_code(STM_ABORT_NO_RETRY));
        stats.count_commit();
        stats.count_commit();
        assert_eq!(local_counter(&stats, "nb_aborts"), Some(3));
        assert_eq!(local_counter(&stats, "nb_aborts_validate_read"), Some(1));
        assert_eq!(local_counter(&stats, "nb_aborts_locked_write"), Some(1));
        assert_eq!(local_counter(&stats, "nb_aborts_explicit"), Some(1));
        assert_eq!(local_counter(&stats, "nb_aborts_locked_read"), Some(0));
        assert_eq!(local_counter(&stats, "max_retries"), Some(3));
        assert_eq!(local_counter(&stats, "nb_commits"), Some(2));
        assert_eq!(local_counter(&stats, "bogus"), None);
    }

    #[test]
    fn an_exiting_thread_is_counted_once() {
        let mut tallies = Tallies {
            live: Vec::new(),
            exited: Totals::default(),
        };
        let (first, second) = (Arc::new(Tally::default()), Arc::new(Tally::default()));
        tallies.live.extend([first.clone(), second.clone()]);
        Tally::bump(&first.commits, 3);
        Tally::bump(&second.commits, 4);
        Tally::bump(&second.aborts, 2);
        second.max_retries.store(2, Ordering::Relaxed);
        let before = tallies.total();
        assert_eq!(
            (before.commits, before.aborts, before.max_retries),
            (7, 2, 2)
        );
        tallies.retire(&second);
        assert_eq!(tallies.live.len(), 1);
        let after = tallies.total();
        assert_eq!((after.commits, after.aborts, after.max_retries), (7, 2, 2));
        Tally::bump(&first.commits, 1);
        assert_eq!(tallies.total().commits, 8);
    }
}
