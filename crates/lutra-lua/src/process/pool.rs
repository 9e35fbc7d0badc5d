//! Recycling finished Lua states (seed 001's luaproc recycles its Lua states too):
//! a new process takes a state from the pool instead of building one, up to the
//! runtime's recycle limit.
//!
//! # Protocol
//! 1. A new state takes a snapshot of its baseline (`baseline.rs`) once its libraries
//!    and `lutra` are installed, before any user code runs, if the pool could ever
//!    hold it: while fewer live states carry a baseline than the recycle limit
//!    ([`StatePool::prepare`]). The others (say the 36 beyond the limit of 64 when
//!    100 processes run at once) skip the snapshot, and are dropped when they finish.
//!    Once a state without a baseline finishes while the pool has room (its
//!    snapshot would have paid: the states with one are busy, say long-lived
//!    processes), every new state takes one again, as if there were no bound.
//! 2. A process that finished (returned or raised) hands its state to
//!    [`StatePool::recycle`]: the process's context is removed, the transaction it
//!    left pending or parked in `retry` (if it was cancelled there) is forgotten, the
//!    memory limit lifted, the baseline restored, the garbage collected once, in full
//!    (dropping the handles the old process held and running its finalizers, with no
//!    process context, before the process's joiners are woken); then the state is
//!    pooled, unless the pool is full.
//! 3. [`StatePool::take`] restores the baseline of a pooled state again (undoing what
//!    those finalizers stored: done only for a state that is reused, not for one that
//!    stays pooled until the end) and gives it to a new process, which binds its own
//!    context and memory limit to it. What the finalizers resurrected is left for the
//!    next process's collections, without a finalizer (it ran) unless one set a new
//!    one.
//! 4. A program about to end closes its pooled states with
//!    [`StatePool::close_for_exit`]: the finalizers still pending in them run (those
//!    the finalizers of step 2 set, on what they stored), but their memory is left
//!    to the OS instead of being freed object by object (`closing.rs`).
//!
//! # Invariants
//! - A pooled state holds no process context and no Lua value of an earlier process
//!   reachable from its globals, its registry or its loaded modules (see `baseline.rs`
//!   for exactly what is restored), but what its recycle's finalizers stored there;
//!   a taken state, not even that. Its transaction context holds no descriptor and no
//!   `retry` registration.
//! - A state is recycled as the last handle to it: its process's task dropped every
//!   other (values, tables, functions, its coroutine) first (`task.rs`,
//!   `ProcessTask::finish_as`). Once pooled, the state may be taken by a new process
//!   on another worker at once, and a handle dropped later would touch it from two
//!   threads at once.
//! - A state whose process hit an internal error (a Rust panic, a failed boot) or ran
//!   out of memory is not pooled, nor is a state without a baseline.
//! - `baselined` counts the live states that carry a baseline (pooled or running):
//!   each holds a [`Baselined`] as app data, which counts itself out when its state
//!   is dropped.

use super::{baseline, closing};
use mlua::Lua;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Finished states ready for reuse.
#[derive(Default)]
pub(crate) struct StatePool {
    states: Mutex<Vec<Lua>>,
    /// Live states carrying a baseline (module invariants).
    baselined: Arc<AtomicUsize>,
    /// A state without a baseline finished while the pool had room (step 1): from
    /// then on every new state takes one.
    missed: AtomicBool,
}

/// The app data of a state that carries a baseline: counted in its pool's
/// `baselined` while the state lives.
struct Baselined(Arc<AtomicUsize>);

impl Drop for Baselined {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl StatePool {
    /// Takes the baseline of the new state `lua` if the pool could ever hold it
    /// (step 1): fewer live states than `limit` carry one, or a state without one
    /// missed a place in the pool.
    pub(crate) fn prepare(&self, lua: &Lua, limit: usize) -> mlua::Result<()> {
        // ORDERING: Relaxed: the count and the flag only decide which states are
        // snapshotted; a race makes one state more or fewer recyclable, never a
        // state unsafe.
        if limit == 0
            || (self.baselined.load(Ordering::Relaxed) >= limit
                && !self.missed.load(Ordering::Relaxed))
        {
            return Ok(());
        }
        baseline::snapshot(lua)?;
        self.baselined.fetch_add(1, Ordering::Relaxed);
        lua.set_app_data(Baselined(self.baselined.clone()));
        Ok(())
    }

    /// A pooled state, if any, its baseline restored (step 3); a state whose
    /// restore fails (Lua code changed its snapshot) is dropped.
    pub(crate) fn take(&self) -> Option<Lua> {
        loop {
            let lua = self.lock().pop()?;
            if baseline::restore(&lua).is_ok() {
                return Some(lua);
            }
        }
    }

    /// Resets `lua` and keeps it, unless it carries no baseline or `limit` states are
    /// pooled already.
    pub(crate) fn recycle(&self, lua: Lua, limit: usize) {
        if self.lock().len() >= limit {
            return;
        }
        if lua.app_data_ref::<Baselined>().is_none() {
            self.missed.store(true, Ordering::Relaxed);
            return;
        }
        if reset(&lua).is_err() {
            return;
        }
        let mut states = self.lock();
        if states.len() < limit {
            states.push(lua);
        }
    }

    /// Empties the pool, closing its states with their memory left to the OS (step
    /// 4); answers how many it held.
    pub(crate) fn close_for_exit(&self) -> usize {
        let states = std::mem::take(&mut *self.lock());
        let count = states.len();
        closing::close_all_leaving_memory(states);
        count
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Lua>> {
        self.states.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Restores the baseline of a finished process's state and collects its garbage
/// (step 2).
fn reset(lua: &Lua) -> mlua::Result<()> {
    lua.remove_app_data::<crate::process::ProcessContext>();
    if let Some(transactions) = lua.app_data_ref::<crate::atomic::TxContext>() {
        transactions.forget_left_over();
    }
    // SAFETY: a protected call on the state's stack, left as it was: the handle the
    // process's native calls anchored last is let go.
    unsafe { lua.exec_raw::<()>((), |state| crate::api::native::prepare_last_handle(state))? };
    crate::transfer::moved::forget_all(lua);
    lua.set_memory_limit(0)?;
    baseline::restore(lua)?;
    lua.gc_collect()
}

#[cfg(test)]
mod tests {
    use super::{Baselined, StatePool};
    use mlua::{Lua, LuaOptions, StdLib};

    fn state() -> Lua {
        // SAFETY: a test state; the debug library is what the baseline walks.
        unsafe { Lua::unsafe_new_with(StdLib::ALL, LuaOptions::new()) }
    }

    fn baselined(lua: &Lua) -> bool {
        lua.app_data_ref::<Baselined>().is_some()
    }

    #[test]
    fn only_as_many_live_states_as_the_limit_carry_a_baseline() {
        let pool = StatePool::default();
        let (a, b) = (state(), state());
        pool.prepare(&a, 1).unwrap();
        pool.prepare(&b, 1).unwrap();
        assert!(baselined(&a) && !baselined(&b));
        drop(a);
        let c = state();
        pool.prepare(&c, 1).unwrap();
        assert!(baselined(&c), "a dropped state counts itself out");
    }

    #[test]
    fn a_missed_place_in_the_pool_makes_every_new_state_take_a_baseline() {
        let pool = StatePool::default();
        let (busy, a, b) = (state(), state(), state());
        pool.prepare(&busy, 1).unwrap();
        pool.prepare(&a, 1).unwrap();
        assert!(!baselined(&a));
        pool.recycle(a, 1);
        pool.prepare(&b, 1).unwrap();
        assert!(
            baselined(&b),
            "the pool had room for the state without a baseline"
        );
        pool.recycle(b, 1);
        assert!(pool.take().is_some());
    }

    #[test]
    fn finalizers_run_at_the_recycle_and_their_stores_are_undone_at_the_take() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let pool = StatePool::default();
        let lua = state();
        pool.prepare(&lua, 1).unwrap();
        let finalized = Arc::new(AtomicBool::new(false));
        let flag = finalized.clone();
        let note = lua
            .create_function(move |_, ()| {
                flag.store(true, Ordering::Relaxed);
                Ok(())
            })
            .unwrap();
        lua.globals().set("note", note).unwrap();
        lua.load("local note = note keep = setmetatable({}, { __gc = function() note() stored = true end })")
            .exec()
            .unwrap();
        pool.recycle(lua, 1);
        assert!(
            finalized.load(Ordering::Relaxed),
            "the finalizer ran at the recycle"
        );
        let again = pool.take().expect("pooled");
        let stored: mlua::Value = again.globals().get("stored").unwrap();
        assert!(stored.is_nil(), "what the finalizer stored is undone");
    }

    #[test]
    fn closing_for_exit_runs_the_finalizers_the_recycle_set() {
        use crate::process::closing::tests::{witness, witnessed};
        let path = witness("pool");
        let pool = StatePool::default();
        let lua = state();
        pool.prepare(&lua, 1).unwrap();
        lua.load(
            r#"
            local path = ...
            setmetatable({}, { __gc = function()
              kept = setmetatable({}, { __gc = function()
                local file = io.open(path, "w")
                file:write("closed")
                file:close()
              end })
            end })
            "#,
        )
        .call::<()>(path.to_str().unwrap())
        .unwrap();
        pool.recycle(lua, 1);
        assert_eq!(witnessed(&path), "", "kept is still alive in the pool");
        assert_eq!(pool.close_for_exit(), 1);
        assert_eq!(witnessed(&path), "closed", "the pooled state was closed");
        assert!(pool.take().is_none(), "the pool is empty");
    }

    #[test]
    fn a_recycled_state_forgets_the_transaction_its_process_left() {
        use crate::atomic::{Engine, Pending, TxContext};
        use lutra_stm::{TVar, TxOptions};
        use std::sync::Arc;
        use std::task::{Wake, Waker};
        struct Unused;
        impl Wake for Unused {
            fn wake(self: Arc<Self>) {}
        }
        let engine = Arc::new(Engine::new(&crate::options::Options::default(), 1));
        let pool = StatePool::default();
        let lua = state();
        pool.prepare(&lua, 1).unwrap();
        lua.set_app_data(TxContext::new(engine.clone()));
        // What a process cancelled in `lutra.retry()` leaves: its registration, whose
        // waker would wake the ended process.
        let ready = TVar::new(false);
        let mut parked = engine.lease().unwrap();
        parked.begin(TxOptions::default());
        assert!(!parked.transaction().read(&ready).unwrap());
        let _ = parked.transaction().retry::<()>();
        let waker_owner = Arc::new(Unused);
        let watch = parked
            .watch_for_change(Waker::from(waker_owner.clone()))
            .unwrap();
        engine.release(parked);
        // What a process cancelled while it yielded inside `lutra.atomic` leaves.
        let pending = engine.lease().unwrap();
        {
            let context = TxContext::of(&lua).unwrap();
            *context.watch.borrow_mut() = Some(watch);
            *context.pending.borrow_mut() = Some(Pending {
                desc: pending,
                first: false,
            });
        }
        pool.recycle(lua, 1);
        let again = pool.take().expect("pooled");
        let context = TxContext::of(&again).unwrap();
        assert!(context.pending.borrow().is_none(), "a pending transaction");
        assert!(context.watch.borrow().is_none(), "a retry registration");
        assert_eq!(Arc::strong_count(&waker_owner), 1, "the waker is kept");
    }

    #[test]
    fn a_state_without_a_baseline_is_not_pooled() {
        let pool = StatePool::default();
        let (a, b) = (state(), state());
        pool.prepare(&a, 1).unwrap();
        pool.prepare(&b, 1).unwrap();
        pool.recycle(b, 4);
        assert!(pool.take().is_none());
        a.load("leaked = true").exec().unwrap();
        pool.recycle(a, 4);
        let again = pool.take().expect("the state with a baseline is pooled");
        assert!(
            again
                .globals()
                .get::<mlua::Value>("leaked")
                .unwrap()
                .is_nil()
        );
        assert!(pool.take().is_none());
    }
}
