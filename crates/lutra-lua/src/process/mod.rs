//! Processes: isolated Lua states run as scheduler tasks and resumed as coroutines
//! (seed 001's Lua processes; seed 002's isolation).

mod baseline;
mod blocked;
pub(crate) mod cancel;
mod closing;
mod core;
mod fingerprint;
pub(crate) mod handle;
mod pool;
pub(crate) mod preempt;
mod resume;
pub(crate) mod state;
mod task;
mod user_hook;
mod watch;

pub use core::{Outcome, ProcessCore};
pub(crate) use handle::ProcessHandle;
pub(crate) use pool::StatePool;
pub(crate) use state::{GETUPVALUE_KEY, ProcessContext, new_state};
pub(crate) use task::{Code, ProcessTask};
