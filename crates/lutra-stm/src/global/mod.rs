//! The engine's global structures, shared by every descriptor.
//!
//! - `stm.rs`: [`Stm`](crate::Stm), the engine: clock, records, registry, gates.
//! - `orec.rs`: the ownership records (versioned locks).
//! - `registry.rs`: descriptors as other transactions see them (status words).
//! - `epoch.rs`: epoch-based reclamation.
//! - `waiting.rs`: blocking `retry`; `parking.rs`: how a waiter gets out of the way.
//! - `stats.rs`: statistics; `ticks.rs`: the clock that times attempts.
//! - `sync.rs`: the atomics, swapped for shuttle's or loom's in model checks.

pub(crate) mod epoch;
pub(crate) mod orec;
pub(crate) mod parking;
pub(crate) mod registry;
pub(crate) mod stats;
pub(crate) mod stm;
pub(crate) mod sync;
pub(crate) mod ticks;
pub(crate) mod waiting;
