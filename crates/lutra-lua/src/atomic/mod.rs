//! `lutra.atomic`, `lutra.retry`, `lutra.or_else` for Lua processes, and the
//! transaction every shared-table access runs in.
//!
//! - `engine.rs`: the runtime's engine instance (manager, policy hooks, a parking that
//!   never blocks a worker), the descriptor pool, site names and statistics.
//! - `driver.rs`: one `lutra.atomic` call's attempts, driven from Rust, with `retry`
//!   parking the process (not the worker) and the policy's decisions acted on by
//!   yielding the process.
//! - this file: a Lua state's transaction context ([`TxContext`]) and [`with_tx`],
//!   which runs one shared-table operation in the running `atomic` attempt or, outside
//!   `atomic`, as a transaction of its own.
//!
//! # Invariants
//! - An attempt runs entirely inside one Rust call (`driver::run`) that calls into Lua:
//!   Lua code inside it cannot yield (the call is a C boundary), so an attempt never
//!   spans a suspension of its process and is always running on some OS thread.
//! - `running` is true exactly while that call is inside Lua; the descriptor is then in
//!   `desc`, borrowed only for the length of one shared-table operation (no Lua code
//!   runs while it is borrowed).
//! - Between attempts `pending` may hold a transaction waiting to restart (after a
//!   yield the policy asked for); `watch` holds the registration of a transaction
//!   parked in `retry` until the process runs again. They belong to that call only:
//!   a new call (`raw.atomic_run`, not `raw.atomic_again`) forgets them.
//! - `results` holds the results of a call that committed until `lutra.atomic`
//!   takes them (`raw.atomic_results(key)`, its last step), under the key its `"ok"`
//!   answer gave.

pub(crate) mod driver;
pub(crate) mod engine;

pub(crate) use engine::Engine;
pub use engine::{SiteStats, TransactionStats};

use lutra_stm::{Abort, AbortReason, ChangeWatch, Checkpoint, Transaction, TxDescriptor};
use mlua::Lua;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// A transaction waiting to (re)start after its process yielded.
pub(crate) struct Pending {
    pub(crate) desc: Box<TxDescriptor>,
    /// Whether no attempt has begun yet (`begin`, not `restart`).
    pub(crate) first: bool,
}

/// What a Lua state knows about its transactions (its app data).
pub(crate) struct TxContext {
    pub(crate) engine: Arc<Engine>,
    /// The running attempt's descriptor (while `running`).
    pub(crate) desc: RefCell<Option<Box<TxDescriptor>>>,
    pub(crate) running: Cell<bool>,
    pub(crate) pending: RefCell<Option<Pending>>,
    pub(crate) watch: RefCell<Option<ChangeWatch>>,
    /// The results of the `lutra.atomic` calls that answered `"ok"`, each under the
    /// key the answer gave, until `raw.atomic_results(key)` takes them. Keyed, not a
    /// single slot: a finalizer may run a call of its own in between.
    results: RefCell<Vec<(u64, mlua::MultiValue)>>,
    /// The key of the next results kept.
    next_results: Cell<u64>,
    /// Checkpoints open in the running attempt (`or_else`, nested `atomic`).
    pub(crate) checkpoints: RefCell<Vec<Checkpoint>>,
}

impl TxContext {
    pub(crate) fn new(engine: Arc<Engine>) -> Self {
        Self {
            engine,
            desc: RefCell::new(None),
            running: Cell::new(false),
            pending: RefCell::new(None),
            watch: RefCell::new(None),
            results: RefCell::new(Vec::new()),
            next_results: Cell::new(0),
            checkpoints: RefCell::new(Vec::new()),
        }
    }

    /// The context of `lua`.
    ///
    /// # Errors
    /// When `lua` is not a Lutra process's state.
    pub(crate) fn of(lua: &Lua) -> mlua::Result<mlua::AppDataRef<'_, TxContext>> {
        lua.app_data_ref::<TxContext>()
            .ok_or_else(|| mlua::Error::runtime("this Lua state has no transaction context"))
    }

    /// Forgets what a `lutra.atomic` call left between its attempts when it was
    /// abandoned: a transaction kept pending by a yield (its descriptor goes back to
    /// the engine's pool) and the registration of a `retry` it was parked in (its
    /// waker with it). A call stopped by an error while it yielded or waited (a
    /// cancellation) leaves them; the process's next call must not take them up.
    pub(crate) fn forget_waiting(&self) {
        if let Some(pending) = self.pending.borrow_mut().take() {
            self.engine.release(pending.desc);
        }
        self.watch.borrow_mut().take();
    }

    /// Keeps `values`, the results of a call that committed, until
    /// [`TxContext::take_results`]; answers their key.
    pub(crate) fn keep_results(&self, values: mlua::MultiValue) -> u64 {
        let key = self.next_results.get();
        self.next_results.set(key.wrapping_add(1));
        self.results.borrow_mut().push((key, values));
        key
    }

    /// The results kept under `key`, taken (once).
    pub(crate) fn take_results(&self, key: u64) -> Option<mlua::MultiValue> {
        let mut kept = self.results.borrow_mut();
        let index = kept.iter().rposition(|(at, _)| *at == key)?;
        Some(kept.swap_remove(index).1)
    }

    /// Forgets everything the process's calls left ([`TxContext::forget_waiting`],
    /// and results an error kept `lutra.atomic` from taking): the process ended, and
    /// the next process on the same state (`process/pool.rs`) must find none of it.
    pub(crate) fn forget_left_over(&self) {
        self.forget_waiting();
        self.results.borrow_mut().clear();
    }

    /// Runs `body` with the running attempt's descriptor.
    ///
    /// # Errors
    /// When no attempt is running.
    pub(crate) fn with_attempt<R>(
        &self,
        body: impl FnOnce(&mut TxDescriptor) -> R,
    ) -> mlua::Result<R> {
        let mut slot = self.desc.borrow_mut();
        match (self.running.get(), slot.as_mut()) {
            (true, Some(desc)) => Ok(body(desc)),
            _ => Err(mlua::Error::runtime(
                "no lutra.atomic transaction is running",
            )),
        }
    }
}

impl Drop for TxContext {
    fn drop(&mut self) {
        let desc = self.desc.get_mut().take();
        let pending = self.pending.get_mut().take().map(|p| p.desc);
        for desc in desc.into_iter().chain(pending) {
            self.engine.release(desc);
        }
    }
}

/// The error a shared-table access raises in a doomed attempt: `lutra.atomic` catches
/// it and runs the transaction again (or waits, after `retry`).
pub(crate) fn aborted(reason: AbortReason) -> mlua::Error {
    mlua::Error::runtime(format!(
        "transaction attempt aborted ({}): lutra.atomic runs it again",
        reason.name()
    ))
}

/// Runs one shared-table operation: in the running `atomic` attempt of `lua` if there
/// is one, otherwise as a transaction of its own (re-run on conflict).
///
/// # Errors
/// In an attempt that is (or becomes) doomed: [`aborted`], raised again by every later
/// access of the attempt.
pub(crate) fn with_tx<R>(
    lua: &Lua,
    mut body: impl FnMut(&mut Transaction<'_>) -> Result<R, Abort>,
) -> mlua::Result<R> {
    let context = TxContext::of(lua)?;
    if context.running.get() {
        let mut slot = context.desc.borrow_mut();
        if let Some(desc) = slot.as_mut() {
            if let Some(reason) = desc.doomed() {
                return Err(aborted(reason));
            }
            return body(&mut desc.transaction()).map_err(|abort| aborted(abort.reason()));
        }
    }
    Ok(context
        .engine
        .stm
        .transaction()
        .site(engine::SINGLE_ACCESS_SITE)
        .run(body))
}
