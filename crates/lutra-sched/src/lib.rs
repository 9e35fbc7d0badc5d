//! Lutra's transaction-aware user-level scheduler (seed 004, LUTS; seed 003, TxLinux).
//!
//! One worker thread per core, pinned; any number of tasks multiplexed on them. A task
//! is an interface ([`Resumable`]): native tasks are Rust closures on their own stack
//! (corosensei, with a guard page); Lua processes will be Lua coroutines. Tasks yield,
//! park and unpark, wait on barriers, announce the transaction they run and switch to
//! a task that runs another, or announce a priority and give way to a task of at least
//! some priority. [`TaskParking`] lets the STM engine park tasks on `retry` instead of
//! blocking workers. The transaction-aware policies ([`policy::Policy`]: round-robin,
//! ATS, CILUTS, CTLUTS, restart-profile) plug into the engine's hooks. The scheduler's
//! shared structures (run queue, live-task count) are synchronised by locks or by
//! transactions on a private engine, chosen at start-up ([`Builder::sync`], seed 001);
//! [`sync_mode`] offers the same choice to client runtimes.
//!
//! | file | job |
//! |------|-----|
//! | `runtime.rs` | builder, runtime, spawning, worker count |
//! | `shared.rs` | the state workers and tasks share (queue, live count, workers) |
//! | `worker.rs` | the run loop |
//! | `seat.rs` | a worker's seat: which carrier thread runs it, and the hand-off of a blocked one's |
//! | `carrier.rs` | carrier threads, the pool of spare ones, retaking a blocked carrier's seat |
//! | `queue/` | the run queues (one per worker, plus a global one), stealing, sleeping and waking one worker, LUTS's switch: under locks, or on transactions |
//! | `rest.rs` | a worker whose tasks keep crossing to another worker with little run between crossings rests a while |
//! | `live.rs` | the live-task count and `wait_idle` |
//! | `sync_mode/` | locks or transactions, chosen at start-up: [`sync_mode::SyncMode`], and the toolkit client runtimes build their shared structures with ([`sync_mode::SyncCell`], [`sync_mode::SyncQueue`]) |
//! | `task.rs` | task records and their state protocol |
//! | `native.rs` | native tasks and join handles |
//! | `suspend.rs` | how a task suspends and is woken: park, unpark, yield, switch |
//! | `barrier.rs` | sense-reversing barrier |
//! | `stm_parking.rs` | the engine's parking interface (`lutra_stm::Parking`) for tasks |
//! | `policy/` | transaction-aware policies in the engine's hooks (round-robin, ATS, CILUTS, CTLUTS, restart-profile) |
//! | `context.rs` | what the current thread runs |
//! | `local.rs` | task-local storage for client libraries (the C API) |
//! | `overflow.rs` | a task's stack overflow reported as its failure |
//! | `sync.rs` | the primitives the model-checked protocols use: `std`'s, or shuttle's for the model checks |
//!
//! ```
//! use lutra_sched::Runtime;
//! use lutra_stm::{Config, Stm, TVar};
//! use std::sync::Arc;
//!
//! let runtime = Runtime::builder().workers(2).build();
//! let stm = Stm::new(Config::default().with_parking(Arc::new(lutra_sched::TaskParking)));
//! let counter = Arc::new(TVar::new(0u64));
//! let tasks: Vec<_> = (0..64)
//!     .map(|_| {
//!         let (stm, counter) = (stm.clone(), counter.clone());
//!         runtime.spawn(move || {
//!             for _ in 0..100 {
//!                 stm.atomically(|tx| tx.modify(&counter, |n| n + 1));
//!                 lutra_sched::yield_now();
//!             }
//!         })
//!     })
//!     .collect();
//! tasks.into_iter().for_each(|task| task.join().unwrap());
//! assert_eq!(stm.atomically(|tx| tx.read(&counter)), 6400);
//! ```

mod barrier;
mod carrier;
mod context;
mod live;
mod local;
mod native;
mod overflow;
pub mod policy;
mod queue;
mod rest;
mod runtime;
mod seat;
mod shared;
mod stm_parking;
mod suspend;
mod sync;
pub mod sync_mode;
mod task;
mod worker;

pub use barrier::Barrier;
pub use carrier::{Carrier, DEFAULT_MAX_BLOCKING_THREADS, Observed, current_carrier};
pub use context::{current_task, worker_index};
pub use local::task_local;
pub use native::{JoinHandle, TaskPanic};
pub use runtime::{
    Builder, DEFAULT_STACK_SIZE, OutsideWake, Runtime, TaskBuilder, TaskOptions, spawn,
};
pub use stm_parking::TaskParking;
pub use suspend::{
    current_waker, park, set_priority, set_tx_id, switch, switch_to_priority, yield_now,
};
pub use task::{Resumable, Step, TaskCore};
