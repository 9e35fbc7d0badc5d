//! Locks built on Lutra's transactions.
//!
//! - [`global`]: a global lock elided by transactions, whose critical sections run as
//!   transactions and fall back to the lock (Odaira et al., "Eliminating Global
//!   Interpreter Locks in Ruby through Hardware Transactional Memory", seed 000), with
//!   the per-site adaptive transaction length of its Fig. 3.
//! - [`coop`]: cooperative locks usable optimistically (as a transaction) or
//!   exclusively on the same data (Rossbach et al., TxLinux, seed 003, Section 4).

pub mod coop;
pub mod global;
