//! The C ABI of Lutra's STM engine: tinySTM's core API (`stm.h`, `wrappers.h`,
//! `mod_mem.h`, `mod_stats.h`) with its names and meaning, plus a few Lutra extensions
//! (`stm_atomically`, status-returning accessors, `stm_quiesce`, error reporting), and
//! LUTS's interface to Lutra's scheduler (`sched.h`: many tasks on pinned workers).
//! The headers are hand-written in `include/lutra/`; this crate builds `liblutra.so`
//! (soname `liblutra.so.0`) and `liblutra.a`.
//!
//! # Shape
//! - Every function of the ABI is a Rust `extern "C"` function. Those that may abort
//!   a transaction are thin trampolines: they call the engine through `boundary.rs`
//!   (which catches panics and records errors) and get back a status; only then,
//!   owning nothing, do they hand an abort status to the C shim (`c/shim.c`), which
//!   performs the `siglongjmp`.
//! - `stm_load`, `stm_store`, the typed accessors, the jump-free accessors,
//!   `stm_start`, `stm_commit` and `stm_atomically`'s begin and settle first try a
//!   fast path (`fast.rs`): a registered plain thread finds its state in an
//!   initial-exec thread-local slot and calls the engine directly, with no boundary
//!   (a panic there is a bug and aborts the process: `extern "C"` functions cannot
//!   unwind); misuse, tasks of the scheduler and aborts leave it for the general
//!   path.
//! - A transactional function called while no engine runs aborts the process with
//!   a message, and so does `stm_init` with a bad configuration (`engine.rs`).
//! - The shim allocates jump buffers and performs the jumps, decodes `stm_tx_attr_t`
//!   (a union of bit-fields, whose layout only a C compiler knows), and runs the loop
//!   of [`stm_atomically`](atomically::stm_atomically).
//! - Each thread that called `stm_init_thread` owns a [`lutra_stm::TxDescriptor`] and a
//!   `sigjmp_buf` (`thread.rs`), kept in a Rust thread-local — or, in a task of the
//!   scheduler, in the task's own task-local value (`locals.rs`): a task is a thread
//!   for `stm.h`, whatever other tasks its worker runs. The engine instance is
//!   process-wide (`engine.rs`), created by `stm_init` (design and contention manager
//!   from `LUTRA_STM_DESIGN` / `LUTRA_STM_CM`) or `lutra_stm_init_with`; its waits go
//!   through the scheduler's parking, so that they suspend tasks, not workers.
//! - The scheduler is process-wide too (`scheduler.rs`), started by `sched_init`.
//!
//! | file | job |
//! |------|-----|
//! | `lifecycle.rs` | `stm_init`, `stm_exit`, threads, `stm_quiesce` |
//! | `txn.rs` | `stm_start`, `stm_commit`, `stm_abort`, irrevocability, flags |
//! | `access.rs` | word and byte-range loads and stores, both abort styles |
//! | `wrappers.rs` | `wrappers.h`: typed loads and stores |
//! | `subword.rs` | the one path of a value within a word: typed accessors, libitm's barriers |
//! | `memory.rs` | `mod_mem.h`: `stm_malloc`, `stm_free` |
//! | `pending_free.rs` | what `stm_free` checks: double frees, stack and global pointers |
//! | `stats.rs`, `params.rs` | statistics and parameters by tinySTM name |
//! | `atomically.rs` | `stm_atomically`, the jump-free entry point |
//! | `retry.rs` | `stm_retry`: block until something read changes |
//! | `itm/` | GCC's libitm ABI (`-fgnu-tm`) on the same per-thread state |
//! | `attempt.rs` | begin, and the abort path: roll back, wait, restart or end |
//! | `abandon.rs` | a `longjmp` out of a running transaction rolls it back |
//! | `thread.rs`, `engine.rs` | per-thread state; the process-wide engine |
//! | `fast.rs` | the fast path's initial-exec slot for a plain thread's state |
//! | `fork.rs` | `pthread_atfork` handlers: a `fork()`ed child gets a fresh engine |
//! | `locals.rs` | where per-thread state lives: the thread's, or the task's |
//! | `sched.rs`, `scheduler.rs` | `sched.h`; the process-wide scheduler |
//! | `status.rs`, `last_error.rs`, `boundary.rs` | codes, last error, panic guard |
//! | `shim.rs` | the C shim seen from Rust |
//! | `signals.rs` | a signal handler cannot reach the transaction it interrupted |
//! | `interpose.rs` | the C library's definitions of the functions interposed |
//! | `task_exit.rs` | `pthread_exit` in a task of the scheduler ends the task |
//!
//! # Protocol: an abort (jump style, tinySTM's)
//! 1. An access, `stm_commit`, `stm_abort`, `stm_set_irrevocable` or `stm_free` meets
//!    an abort inside the engine.
//! 2. Rust rolls the attempt back (locks, allocations, buffered writes), counts it,
//!    waits the contention manager's restart delay, asks the scheduler hooks, and
//!    begins the next attempt of the same transaction
//!    (`TxDescriptor::restart`), with flat nesting reset to one level.
//! 3. Rust returns the tinySTM abort code with `STM_PATH_INSTRUMENTED` (bit 0) set;
//!    every Rust frame has returned except the trampoline, which holds only integers.
//! 4. The trampoline calls the shim, which `siglongjmp`s to the buffer that
//!    `stm_start` returned (the calling thread's or task's own), so the code after the
//!    caller's `sigsetjmp` runs inside the fresh attempt. `stm_start` is not called
//!    again, as in tinySTM.
//!
//! With the `no_retry` attribute, or `stm_abort(STM_ABORT_NO_RETRY)`, step 2 ends the
//! transaction instead of restarting it and step 4 does not happen: the call returns
//! (bit 0 of the status is clear), as in tinySTM.
//!
//! # Protocol: an abort (status style, Lutra's)
//! The `lutra_stm_load` / `lutra_stm_store` accessors never jump: they return the
//! abort code (positive, bit 0 clear) and leave the attempt doomed (every later access
//! reports the same abort). The function run by `stm_atomically` returns that code;
//! `stm_atomically` then performs steps 2 and 3 and calls the function again.
//!
//! # Invariants
//! - On a registered thread, `nesting > 0` exactly when the descriptor has an attempt
//!   running (possibly doomed).
//! - No Rust frame that owns anything is ever jumped over: the only frames between a
//!   `siglongjmp` and its `sigsetjmp` are C frames and trampolines holding integers.
//! - No panic leaves a function of the ABI: on the general path each catches it,
//!   discards the thread's transaction state (rolling back), and returns
//!   `LUTRA_EPANIC`; on the fast path the process aborts with the panic's message.

pub mod abandon;
pub mod access;
pub mod atomically;
mod attempt;
mod boundary;
pub mod cxlock;
mod engine;
mod fast;
mod fork;
mod interpose;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub mod itm;
pub mod last_error;
pub mod lifecycle;
mod locals;
pub mod memory;
pub mod params;
mod pending_free;
pub mod retry;
pub mod sched;
mod scheduler;
mod shim;
pub mod signals;
pub mod stats;
pub mod status;
mod subword;
pub mod task_exit;
mod thread;
pub mod txn;
pub mod wrappers;

pub use lifecycle::StmTx;
pub use shim::{SigJmpBuf, StmAtomicFn};
pub use txn::StmTxAttr;
