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

mod abort;
mod access;
pub mod cm;
mod commit;
mod config;
mod descriptor;
mod design;
mod driven;
mod epoch;
mod fallback;
mod gate;
mod hooks;
mod inplace;
mod irrevocable;
mod mode;
mod orec;
mod parking;
mod read_set;
mod registry;
mod run;
mod serial;
mod sets;
mod solo;
mod solo_blocks;
mod stats;
mod stm;
mod straight;
mod sync;
mod ticks;
mod transaction;
#[doc(hidden)]
pub mod tvar;
mod undo_log;
mod waiting;

pub use abort::{Abort, AbortReason};
pub use config::{Config, DesignKind};
pub use descriptor::{RegistryFull, TxDescriptor, TxOptions};
pub use driven::{ChangeWatch, Checkpoint};
pub use epoch::Release;
pub use hooks::{Decision, NoHooks, TxEvent, TxHooks};
pub use parking::{Parking, ThreadParking};
pub use read_set::ReadFront;
pub use run::{BlockingInTransaction, TxBuilder, atomically, ensure_may_block, in_transaction};
pub use stats::{Counters, Stats};
pub use stm::Stm;
pub use transaction::Transaction;
pub use tvar::{TVar, Transactable};
pub use undo_log::UndoWindow;
