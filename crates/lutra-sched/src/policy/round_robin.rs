//! Round-robin: LUTS alone (seed 004, configuration "LUTS"). The hooks do nothing; the
//! gain comes from the scheduler itself, which never runs more execution contexts at
//! once than there are workers (one per core), so a transaction is never preempted by
//! another context of the same core while it runs, and tasks take turns in FIFO order.

use lutra_stm::TxHooks;

/// Hooks of the round-robin policy: none (every decision is `Proceed`).
#[derive(Debug, Default, Clone, Copy)]
pub struct RoundRobin;

impl TxHooks for RoundRobin {}
