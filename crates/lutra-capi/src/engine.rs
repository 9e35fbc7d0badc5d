//! The process-wide engine instance behind the C ABI, the count of threads
//! registered with it, and its configuration by name (`stm_init`'s environment
//! variables, `lutra_stm_init_with`'s arguments).
//!
//! | variable | values | default |
//! |----------|--------|---------|
//! | `LUTRA_STM_DESIGN` | `wb-ctl`, `wb-etl` | `wb-ctl` |
//! | `LUTRA_STM_CM` | `suicide`, `backoff`, `aggressive`, `timestamp`, `size_matters`, `priority` | `backoff` |
//! | `LUTRA_STM_STATS` | `0`, `1` (the engine's own statistics — per-site counts and times — off / on; `stm_get_stats` counts without them) | `0` |
//! | `LUTRA_STM_MAX_THREADS` | `1` to `1048576`: threads (and tasks) registered at once; one more gets `LUTRA_ENOMEM` (`stm_init_thread`) or stops a `-fgnu-tm` program, with a message naming the variable | `8192` |
//! | `LUTRA_STM_SOLO` | `0`, `1` (a thread alone with the engine runs its transactions uninstrumented, as libitm's serial mode; see lutra-stm's `TxDescriptor::allow_solo`) | `1` |
//!
//! # Invariants
//! - `ENGINE` is `Some` between a successful `stm_init` and the matching `stm_exit`;
//!   `RUNNING` says the same, written under `ENGINE`'s write lock.
//! - `THREADS` counts live thread registrations; a registration is taken under the
//!   read lock of `ENGINE`, so `stm_exit` (write lock) sees every thread that could
//!   still use the engine and refuses to drop it while one is registered. Two engines
//!   therefore never serve C threads at once (their ownership records would not see
//!   each other's locks).
//! - A transactional function called on an unregistered thread while no engine runs
//!   aborts the process with a message ([`require_started`]): a C program never runs
//!   on with transactions that do nothing.

use crate::status::{CapiError, CapiResult, LUTRA_EALREADY, LUTRA_EBUSY, LUTRA_ENOMEM};
use lutra_sched::TaskParking;
use lutra_stm::{Config, DesignKind, Stm, cm};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

static ENGINE: RwLock<Option<Stm>> = RwLock::new(None);
static THREADS: AtomicUsize = AtomicUsize::new(0);
/// Whether `ENGINE` is `Some`: written under its write lock, read without it by
/// [`require_started`].
static RUNNING: AtomicBool = AtomicBool::new(false);

/// Environment variable choosing the design at `stm_init`.
pub(crate) const DESIGN_VAR: &str = "LUTRA_STM_DESIGN";
/// Environment variable choosing the contention manager at `stm_init`.
pub(crate) const MANAGER_VAR: &str = "LUTRA_STM_CM";
/// Environment variable turning the engine's statistics off (`0`) or on (`1`).
pub(crate) const STATS_VAR: &str = "LUTRA_STM_STATS";
/// Environment variable turning solo transactions off (`0`) or on (`1`).
pub(crate) const SOLO_VAR: &str = "LUTRA_STM_SOLO";
/// Environment variable bounding the threads registered at once.
pub(crate) const MAX_THREADS_VAR: &str = "LUTRA_STM_MAX_THREADS";
/// The default of [`MAX_THREADS_VAR`]: twice the engine's own default, about 3 MiB of
/// descriptor slots, allocated at `stm_init`.
const DEFAULT_MAX_THREADS: usize = 8192;
/// The largest value of [`MAX_THREADS_VAR`].
const MOST_THREADS: usize = 1 << 20;
/// The bound on registered threads, as read by the last configuration.
static MAX_THREADS: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_THREADS);

/// The error for a registration beyond the bound (the engine's descriptor table is
/// full).
pub(crate) fn too_many_threads() -> CapiError {
    let max = MAX_THREADS.load(Ordering::Relaxed);
    CapiError::new(
        LUTRA_ENOMEM,
        format!(
            "too many threads registered at once ({max}, the most {MAX_THREADS_VAR} \
             allows): set {MAX_THREADS_VAR} higher (up to {MOST_THREADS}) before stm_init, \
             or unregister threads (stm_exit_thread) that run no more transactions"
        ),
    )
}

/// Whether plain threads' transactions may run solo (`LUTRA_STM_SOLO`), as read by
/// the last configuration.
static SOLO: AtomicBool = AtomicBool::new(true);

/// Whether a plain thread registering now may run its transactions solo.
pub(crate) fn solo_allowed() -> bool {
    SOLO.load(Ordering::Relaxed)
}

/// A thread's registration with the engine; dropping it unregisters the thread.
#[derive(Debug)]
pub(crate) struct Registration(());

impl Drop for Registration {
    fn drop(&mut self) {
        THREADS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The running engine.
pub(crate) fn current() -> CapiResult<Stm> {
    ENGINE
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .ok_or_else(CapiError::no_init)
}

/// Registers the calling thread with the running engine.
pub(crate) fn register() -> CapiResult<(Stm, Registration)> {
    let engine = ENGINE.read().unwrap_or_else(PoisonError::into_inner);
    let stm = engine.clone().ok_or_else(CapiError::no_init)?;
    THREADS.fetch_add(1, Ordering::SeqCst);
    Ok((stm, Registration(())))
}

/// The engine's lock, held across a `fork` (`fork.rs`).
pub(crate) fn hold_for_fork() -> std::sync::RwLockWriteGuard<'static, Option<Stm>> {
    ENGINE.write().unwrap_or_else(PoisonError::into_inner)
}

/// In the child of a `fork`, under the lock of [`hold_for_fork`]: replaces the
/// engine, whose other threads are gone with their locks and attempts, by a fresh
/// one of the same configuration (the old one is leaked: its state may name threads
/// that no longer exist), with no thread registered.
pub(crate) fn renew_after_fork(engine: &mut Option<Stm>) {
    if let Some(old) = engine.take() {
        let config = old.config().clone();
        std::mem::forget(old);
        *engine = Some(Stm::new(config));
    }
    THREADS.store(0, Ordering::SeqCst);
}

/// Creates the engine from `config`.
pub(crate) fn start(config: Config) -> CapiResult<()> {
    let mut engine = ENGINE.write().unwrap_or_else(PoisonError::into_inner);
    if engine.is_some() {
        return Err(CapiError::new(
            LUTRA_EALREADY,
            "the STM is already initialized",
        ));
    }
    *engine = Some(Stm::new(config));
    crate::stats::reset_global();
    RUNNING.store(true, Ordering::Relaxed);
    crate::fork::install();
    Ok(())
}

/// For the transactional functions (accesses, start, commit, abort): aborts the
/// process with a message naming `function` when the calling thread is not
/// registered and no engine runs (`stm_init` never called, failed, or undone by
/// `stm_exit`). Returns otherwise; a registered thread implies a running engine.
///
/// One relaxed load: `RUNNING` mirrors `ENGINE`, and a registered thread implies a
/// running engine (`stm_exit` refuses while a thread is registered), so a caller
/// that may proceed never finds it false.
#[inline]
pub(crate) fn require_started(function: &str) {
    // ORDERING: Relaxed suffices. A registered thread took `ENGINE`'s read lock
    // after the write lock that stored `true` was released (the lock orders them),
    // and `false` cannot be stored while it is registered. An unregistered caller
    // ordered after `stm_init` (same thread, or synchronized with it, as creating
    // the thread afterwards does) sees `true` too; one that is not ordered with
    // `stm_init` or `stm_exit` races them, and either answer is one it could get
    // (a stale `true` only leads to the ordinary `LUTRA_ENOTHREAD` error).
    if !RUNNING.load(Ordering::Relaxed) {
        unstarted_slow(function);
    }
}

#[cold]
#[inline(never)]
fn unstarted_slow(function: &str) -> ! {
    eprintln!(
        "lutra: {function}: the STM is not started (stm_init was not called, failed, or \
         stm_exit has run); a transaction cannot run without it: aborting"
    );
    std::process::abort();
}

/// Whether the engine runs.
pub(crate) fn is_running() -> bool {
    ENGINE
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .is_some()
}

/// Drops the engine, unless a thread is still registered.
pub(crate) fn stop() -> CapiResult<()> {
    let mut engine = ENGINE.write().unwrap_or_else(PoisonError::into_inner);
    if engine.is_none() {
        return Err(CapiError::no_init());
    }
    let threads = THREADS.load(Ordering::SeqCst);
    if threads > 0 {
        return Err(CapiError::new(
            LUTRA_EBUSY,
            format!("{threads} thread(s) still registered: each must call stm_exit_thread first"),
        ));
    }
    *engine = None;
    RUNNING.store(false, Ordering::Relaxed);
    Ok(())
}

/// Where a configuration name came from, for error messages.
enum Source {
    Argument(&'static str),
    Variable(&'static str),
}

/// The name given as argument `argument`, else the non-empty environment variable
/// `variable`, with where it came from.
fn chosen(
    given: Option<&str>,
    argument: &'static str,
    variable: &'static str,
) -> Option<(String, Source)> {
    match given {
        Some(name) => Some((name.to_owned(), Source::Argument(argument))),
        None => env(variable).map(|name| (name, Source::Variable(variable))),
    }
}

/// The error for the unknown `name` from `source`, listing the `valid` names.
fn unknown(name: &str, source: &Source, what: &str, valid: &[&str]) -> CapiError {
    let given = match source {
        Source::Argument(argument) => format!("{argument} \"{name}\""),
        Source::Variable(variable) => format!("{variable}=\"{name}\""),
    };
    CapiError::invalid(format!(
        "{given} names no {what}; valid: {}",
        valid.join(", ")
    ))
}

/// The configuration named by `design` and `manager`; `None` takes the environment
/// variable, then the default (`wb-ctl`, `backoff`); the engine's statistics off
/// unless `LUTRA_STM_STATS` is `1`. The engine's waits go through the scheduler's
/// [`TaskParking`]: in a task (`sched.h`) they let the worker run other tasks; in a
/// plain thread they park or yield the thread, as by default.
///
/// # Errors
/// `LUTRA_EINVAL` for an unknown name or value, with a message naming the argument
/// or variable, the value, and the valid names.
pub(crate) fn config_from_names(design: Option<&str>, manager: Option<&str>) -> CapiResult<Config> {
    let mut config = Config::default()
        .with_parking(Arc::new(TaskParking))
        .with_stats(false);
    if let Some((name, source)) = chosen(design, "design", DESIGN_VAR) {
        config.design = DesignKind::from_name(&name)
            .ok_or_else(|| unknown(&name, &source, "design", &["wb-ctl", "wb-etl"]))?;
    }
    if let Some((name, source)) = chosen(manager, "cm", MANAGER_VAR) {
        let shared = cm::by_name(&name)
            .ok_or_else(|| unknown(&name, &source, "contention manager", &cm::NAMES))?;
        config = config.with_shared_manager(shared);
    }
    if let Some((value, source)) = chosen(None, "", STATS_VAR) {
        let on = match value.as_str() {
            "0" => false,
            "1" => true,
            _ => return Err(unknown(&value, &source, "statistics setting", &["0", "1"])),
        };
        config = config.with_stats(on);
    }
    let max_threads = match chosen(None, "", MAX_THREADS_VAR) {
        None => DEFAULT_MAX_THREADS,
        Some((value, source)) => value
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|max| (1..=MOST_THREADS).contains(max))
            .ok_or_else(|| {
                unknown(
                    &value,
                    &source,
                    "bound on threads",
                    &["a number from 1 to 1048576"],
                )
            })?,
    };
    MAX_THREADS.store(max_threads, Ordering::Relaxed);
    config = config.with_max_descriptors(max_threads);
    let solo = match chosen(None, "", SOLO_VAR) {
        None => true,
        Some((value, source)) => match value.as_str() {
            "0" => false,
            "1" => true,
            _ => return Err(unknown(&value, &source, "solo setting", &["0", "1"])),
        },
    };
    SOLO.store(solo, Ordering::Relaxed);
    Ok(config)
}

/// A non-empty environment variable.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::LUTRA_EINVAL;

    #[test]
    fn names_choose_the_configuration() {
        let config = config_from_names(Some("wb-etl"), Some("timestamp")).unwrap();
        assert_eq!(config.design, DesignKind::WriteBackEtl);
        assert_eq!(config.manager.name(), "timestamp");
        let error = config_from_names(Some("write-through"), Some("backoff")).unwrap_err();
        assert_eq!(error.code, LUTRA_EINVAL);
        assert!(error.message.contains("design \"write-through\""));
        assert!(error.message.contains("wb-ctl, wb-etl"));
        let error = config_from_names(Some("wb-ctl"), Some("polite")).unwrap_err();
        assert!(error.message.contains("cm \"polite\""));
        assert!(error.message.contains("size_matters"));
    }
}
