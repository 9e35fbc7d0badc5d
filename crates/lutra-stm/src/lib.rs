//! Lutra's software transactional memory engine.
//!
//! Word-based (any aligned machine word can be accessed through its address, which is
//! what the C ABI needs), time-based (a global version clock and a table of ownership
//! records, as in TL2 and tinySTM) and opaque (no attempt ever sees an inconsistent
//! snapshot, not even one that will abort). Reads are invisible; read-only
//! transactions write no shared metadata; a snapshot is extended instead of aborting
//! when the newer versions are still consistent.
//!
//! - Two designs behind one interface: write-back with commit-time locking and with
//!   encounter-time locking ([`DesignKind`]).
//! - Pluggable contention managers ([`cm`]), including TxLinux's priority manager.
//! - Blocking [`Transaction::retry`] and [`Transaction::or_else`], parked through a
//!   [`Parking`] interface that a scheduler implements.
//! - Irrevocable transactions ([`Transaction::become_irrevocable`]).
//! - Transactional allocation, epoch-based reclamation, statistics per site and per
//!   descriptor, scheduler hooks ([`TxHooks`]).
//!
//! # Files
//!
//! | folder | file | job |
//! |---|---|---|
//! | `attempt/` | `descriptor.rs` | [`TxDescriptor`] and `Core`: a descriptor, its transaction's begin, its accessors |
//! | | `lifecycle.rs` | an attempt's begin and end, its doom |
//! | | `operations.rs` | what a running attempt does through its descriptor |
//! | | `mode.rs` | the attempt's mode and the transaction's escalation: every mode, every transition |
//! | | `commit.rs` | the commit protocol (one function, two paths) and the rollback |
//! | | `driven.rs` | checkpoints and `retry` for drivers that run attempts one call at a time |
//! | | `abort.rs` | [`Abort`], [`AbortReason`] |
//! | `barriers/` | `access.rs` | the read and write barriers, one inlined dispatch each |
//! | | `conflict.rs` | conflicts, locking, validation, snapshot extension |
//! | `design/` | `wb_ctl.rs`, `wb_etl.rs` | when write locks are taken: at commit, or at the first write |
//! | `cm/` | one file per manager | who gives way in a conflict ([`cm`]) |
//! | `sets/` | `read_set.rs` | the read set and its front, which the inlined read tests |
//! | | `write_set.rs` | the write set (with checkpoints) and the lock set |
//! | | `keyed.rs` | the entries, and the keyed vectors and word maps that hold them |
//! | | `undo_log.rs` | a solo attempt's undo log and its window |
//! | `modes/` | `straight.rs` | the straight begin and commit: the common case, no call |
//! | | `solo.rs`, `solo_blocks.rs` | solo attempts (alone in the engine) and the blocks they free |
//! | | `irrevocable.rs`, `gate.rs` | irrevocable attempts and the commit gate they hold |
//! | | `serial.rs` | serial attempts: irrevocable and alone |
//! | | `fallback.rs` | when the engine makes a transaction irrevocable |
//! | | `inplace.rs` | boxed values lent by reference and changed in place |
//! | `global/` | `stm.rs` | [`Stm`]: the clock, the records, the registry, the gates |
//! | | `orec.rs`, `registry.rs` | ownership records; descriptors as others see them |
//! | | `epoch.rs` | epoch-based reclamation |
//! | | `waiting.rs`, `parking.rs` | blocking `retry`, and how a waiter gets out of the way |
//! | | `stats.rs`, `ticks.rs` | statistics, and the clock that times attempts |
//! | | `sync.rs` | the atomics, swapped for shuttle's or loom's in model checks |
//! | `api/` | `run.rs`, `transaction.rs` | [`Stm::atomically`] and the [`Transaction`] it hands out |
//! | | `tvar.rs` | typed [`TVar`]s over the word engine |
//! | | `config.rs`, `hooks.rs` | [`Config`], and the hooks a scheduler installs |
//!
//! # Glossary
//! - *Straight*: the common case that needs no call — a straight attempt (`mode.rs`),
//!   the straight begin and commit (`straight.rs`). *Inlined* says where code sits
//!   (in its caller), not which case it serves.
//! - *Solo*: an attempt alone in its engine, uninstrumented (`solo.rs`).
//! - *Blocks commit*: the commit of a solo attempt that is straight but for the blocks
//!   it freed (`solo_blocks.rs`).
//! - *Instrumented*: an attempt that records its reads and buffers its writes.
//! - *Mode*: what an attempt is doing, one of `mode.rs`'s table.
//!
//! ```
//! use lutra_stm::{Stm, TVar};
//! use std::sync::Arc;
//!
//! let stm = Stm::default();
//! let accounts: Arc<Vec<TVar<i64>>> = Arc::new((0..4).map(|_| TVar::new(100)).collect());
//! let workers: Vec<_> = (0..4)
//!     .map(|id| {
//!         let (stm, accounts) = (stm.clone(), accounts.clone());
//!         std::thread::spawn(move || {
//!             for round in 0..100 {
//!                 let (from, to) = (id, (id + round) % 4);
//!                 stm.atomically(|tx| {
//!                     tx.modify(&accounts[from], |b| b - 1)?;
//!                     tx.modify(&accounts[to], |b| b + 1)
//!                 });
//!             }
//!         })
//!     })
//!     .collect();
//! workers.into_iter().for_each(|w| w.join().unwrap());
//! let total = stm.atomically(|tx| accounts.iter().map(|a| tx.read(a)).sum::<Result<i64, _>>());
//! assert_eq!(total, 400);
//! ```

mod api;
mod attempt;
mod barriers;
pub mod cm;
mod design;
mod global;
mod modes;
mod sets;

pub use api::config::{Config, DesignKind};
pub use api::hooks::{Decision, NoHooks, TxEvent, TxHooks};
pub use api::run::{
    BlockingInTransaction, TxBuilder, atomically, ensure_may_block, in_transaction,
};
pub use api::transaction::Transaction;
#[doc(hidden)]
pub use api::tvar;
pub use api::tvar::{TVar, Transactable};
pub use attempt::abort::{Abort, AbortReason};
pub use attempt::descriptor::{RegistryFull, TxDescriptor, TxOptions};
pub use attempt::driven::{ChangeWatch, Checkpoint};
pub use global::epoch::Release;
pub use global::orec::{PerGranule, PerWord, RecordMapping};
pub use global::parking::{Parking, ThreadParking};
pub use global::stats::{Counters, Stats};
pub use global::stm::Stm;
pub use sets::read_set::ReadFront;
pub use sets::undo_log::UndoWindow;
