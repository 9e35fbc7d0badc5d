//! Lua processes for Lutra (seeds 001 and 002): isolated Lua states run as tasks on
//! the scheduler's workers and resumed as Lua coroutines, talking over channels and
//! mailboxes, with values copied, moved or shared by the transfer rules.
//!
//! ```
//! use lutra_lua::{LuaRuntime, Options, WaitOutcome};
//! let runtime = LuaRuntime::new(Options::default());
//! runtime.spawn_source("=doc", r#"
//!     local ch = lutra.channel()
//!     lutra.spawn(function(ch) ch:send("hello", 42) end, ch)
//!     local word, n = ch:receive()
//!     assert(word == "hello" and n == 42)
//! "#);
//! assert_eq!(runtime.wait(), WaitOutcome::AllFinished);
//! ```

mod api;
mod atomic;
pub mod channel;
mod early_hand_off;
mod intern;
mod liveness;
mod module;
mod options;
mod paths;
mod popen;
pub mod process;
mod readiness;
mod runtime;
pub mod shared;
mod stats;
mod sync;
mod timer;
pub mod transfer;
mod wakers;

pub use atomic::{SiteStats, TransactionStats};
pub use module::{global_runtime, open_luaproc, open_module, options_from_env};
pub use options::{
    MAX_BLOCKING_THREADS, MAX_PREEMPT_MS, MAX_WORKERS, Options, SyncMode, parse_bytes,
    parse_mailbox_capacity, parse_max_blocking_threads, parse_preempt, parse_workers,
};
pub use paths::PackagePaths;
pub use process::{Outcome, ProcessCore};
pub use runtime::{LuaRuntime, WaitOutcome};
pub use stats::RuntimeStats;
