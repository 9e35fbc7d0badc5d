//! The process-wide engine instance behind the C ABI, and the count of threads
//! registered with it.
//!
//! # Invariants
//! - `ENGINE` is `Some` between a successful `stm_init` and the matching `stm_exit`.
//! - `THREADS` counts live thread registrations; a registration is taken under the
//!   read lock of `ENGINE`, so `stm_exit` (write lock) sees every thread that could
//!   still use the engine and refuses to drop it while one is registered. Two engines
//!   therefore never serve C threads at once (their ownership records would not see
//!   each other's locks).

use crate::status::{CapiError, CapiResult, LUTRA_EALREADY, LUTRA_EBUSY};
use lutra_sched::TaskParking;
use lutra_stm::{Config, DesignKind, Stm, cm};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

static ENGINE: RwLock<Option<Stm>> = RwLock::new(None);
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// Environment variable choosing the design at `stm_init`.
pub(crate) const DESIGN_VAR: &str = "LUTRA_STM_DESIGN";
/// Environment variable choosing the contention manager at `stm_init`.
pub(crate) const MANAGER_VAR: &str = "LUTRA_STM_CM";

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
    Ok(())
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
    Ok(())
}

/// The configuration named by `design` and `manager`; `None` takes the environment
/// variable, then the default (`wb-ctl`, `backoff`). The engine's waits go through
/// the scheduler's [`TaskParking`]: in a task (`sched.h`) they let the worker run
/// other tasks; in a plain thread they park or yield the thread, as by default.
pub(crate) fn config_from_names(design: Option<&str>, manager: Option<&str>) -> CapiResult<Config> {
    let design = design.map(str::to_owned).or_else(|| env(DESIGN_VAR));
    let manager = manager.map(str::to_owned).or_else(|| env(MANAGER_VAR));
    let mut config = Config::default().with_parking(Arc::new(TaskParking));
    if let Some(name) = design {
        config.design = DesignKind::from_name(&name).ok_or_else(|| {
            CapiError::invalid(format!(
                "unknown design \"{name}\" (expected wb-ctl or wb-etl)"
            ))
        })?;
    }
    if let Some(name) = manager {
        let shared = cm::by_name(&name).ok_or_else(|| {
            CapiError::invalid(format!(
                "unknown contention manager \"{name}\" (expected one of {})",
                cm::NAMES.join(", ")
            ))
        })?;
        config = config.with_shared_manager(shared);
    }
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
        assert!(error.message.contains("write-through"));
        let error = config_from_names(Some("wb-ctl"), Some("polite")).unwrap_err();
        assert!(error.message.contains("size_matters"));
    }
}
