//! Recycling finished Lua states (seed 001's luaproc recycles its Lua states too):
//! a new process takes a state from the pool instead of building one, up to the
//! runtime's recycle limit.
//!
//! # Protocol
//! 1. A new state takes a snapshot of its baseline (`baseline.rs`) once its libraries
//!    and `lutra` are installed, before any user code runs.
//! 2. A process that finished (returned or raised) hands its state to
//!    [`StatePool::recycle`]: the process's context is removed, the memory limit
//!    lifted, the baseline restored, the garbage collected once, in full (dropping the
//!    handles the old process held and running its finalizers, with no process
//!    context), and the baseline restored again (undoing what those finalizers
//!    stored); then the state is pooled, unless the pool is full. What the finalizers
//!    resurrected is left for the next process's collections, without a finalizer
//!    (it ran) unless one set a new one.
//! 3. [`StatePool::take`] gives a pooled state to a new process, which binds its own
//!    context and memory limit to it.
//!
//! # Invariants
//! - A pooled state holds no process context and no Lua value of an earlier process
//!   reachable from its globals, its registry or its loaded modules (see `baseline.rs`
//!   for exactly what is restored).
//! - A state whose process hit an internal error (a Rust panic, a failed boot) or ran
//!   out of memory is not pooled.

use super::baseline;
use mlua::Lua;
use std::sync::Mutex;

/// Finished states ready for reuse.
#[derive(Default)]
pub(crate) struct StatePool {
    states: Mutex<Vec<Lua>>,
}

impl StatePool {
    /// A pooled state, if any.
    pub(crate) fn take(&self) -> Option<Lua> {
        self.lock().pop()
    }

    /// Resets `lua` and keeps it unless `limit` states are pooled already.
    pub(crate) fn recycle(&self, lua: Lua, limit: usize) {
        if self.lock().len() >= limit {
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

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Lua>> {
        self.states.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Restores the baseline of a finished process's state (step 2).
fn reset(lua: &Lua) -> mlua::Result<()> {
    lua.remove_app_data::<crate::process::ProcessContext>();
    lua.set_memory_limit(0)?;
    baseline::restore(lua)?;
    lua.gc_collect()?;
    baseline::restore(lua)
}
