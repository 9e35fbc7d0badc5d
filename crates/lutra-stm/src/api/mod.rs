//! The engine's face for Rust programs and schedulers.
//!
//! - `run.rs`: [`Stm::atomically`](crate::Stm::atomically) and its builder;
//!   `transaction.rs`: the [`Transaction`](crate::Transaction) it hands out.
//! - `tvar.rs`: typed [`TVar`](crate::TVar)s over the word engine.
//! - `config.rs`: [`Config`](crate::Config); `hooks.rs`: the hooks a scheduler
//!   installs.

pub(crate) mod config;
pub(crate) mod hooks;
pub(crate) mod run;
pub(crate) mod transaction;
pub mod tvar;
