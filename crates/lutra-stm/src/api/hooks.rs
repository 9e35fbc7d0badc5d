//! Hooks a scheduler installs to hear of transaction starts, commits and aborts.
//!
//! The engine calls the hooks and hands their [`Decision`] back to whoever drives the
//! transaction (the `atomically` loop, the C ABI, a scheduler), which acts on it: the
//! engine never switches or sleeps by itself on a hook's word.
//!
//! # Protocol (one transaction, as driven by `atomically` and the C ABI)
//! 1. `start_priority` once, as the first attempt begins: its answer, if any, becomes
//!    the transaction's contention priority for every attempt.
//! 2. Before every attempt (the first and each restart): `on_start`, asked again after
//!    every `Wait` or `SwitchAway` until it answers `Proceed` or `Serialize`.
//! 3. When an attempt ends, however it ends (commit, abort, `retry`, a panic, a C
//!    transaction abandoned without restart): `on_attempt_end`, exactly once.
//! 4. After a commit: `on_commit`. After an abort that will restart (not a `retry`):
//!    `on_abort`, whose decision is acted on before step 2.
//!
//! # Invariants
//! - Every attempt that began ends with exactly one `on_attempt_end`: a hook can hold
//!   a resource from `on_start` to `on_attempt_end` without leaking it.
//! - `on_attempt_end` runs inside the engine's commit and rollback (the descriptor holds
//!   no lock and no gate any more, but `retry` waiters are not yet woken): it must not
//!   block or park. The other hooks run outside attempts and may park.

use crate::attempt::abort::AbortReason;
use std::time::Duration;

/// What a hook asks the driver of a transaction to do before the next attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Decision {
    /// Start (or restart) now.
    #[default]
    Proceed,
    /// Wait a little (spin, or yield the thread), then ask again.
    Wait,
    /// Let another task run (the scheduler's switch), then ask again.
    SwitchAway,
    /// Run the next attempt serialized: irrevocable, alone among updaters.
    Serialize,
}

/// What a hook is told about one attempt.
///
/// `Default` gives an event of site 0 with nothing counted, for building synthetic
/// events (`TxEvent { site: 3, aborts: 2, ..TxEvent::default() }`).
#[derive(Clone, Copy, Debug, Default)]
pub struct TxEvent {
    /// The transaction site (id given by the caller; 0 if none).
    pub site: u32,
    /// The descriptor's registry slot.
    pub slot: usize,
    /// Attempts aborted so far in this transaction (in `on_attempt_end` and
    /// `on_abort`, including the attempt that just aborted).
    pub aborts: u32,
    /// Why the attempt aborted (`on_abort`, and `on_attempt_end` of an attempt that did
    /// not commit; `None` otherwise).
    pub reason: Option<AbortReason>,
    /// How long the attempt that ended last ran (zero before the first attempt ends,
    /// and when statistics are off: the engine times attempts only for them).
    pub elapsed: Duration,
    /// The transaction's contention priority: the start-priority hook's answer, or
    /// the caller's [`TxOptions::priority`](crate::TxOptions) (in the first attempt's
    /// `on_start`, before `start_priority` was asked: the caller's).
    pub priority: i64,
    /// Whether the transaction runs irrevocable: it was started so (through
    /// `TxOptions::irrevocable` or a `Serialize` decision), or its next attempt must be
    /// (becoming irrevocable failed). An attempt that is irrevocable cannot abort, and
    /// one that must restart irrevocable may already hold the commit gate.
    pub irrevocable: bool,
}

/// Scheduler hooks. Every method has a default that does nothing and proceeds.
///
/// Hooks run on the transaction's own thread, outside any attempt (before `begin`,
/// after commit or rollback): they may take locks and park (except
/// [`TxHooks::on_attempt_end`], which must not block), but must not start transactions
/// of the same engine.
pub trait TxHooks: Send + Sync {
    /// Before an attempt begins.
    fn on_start(&self, event: &TxEvent) -> Decision {
        let _ = event;
        Decision::Proceed
    }

    /// After an attempt committed.
    fn on_commit(&self, event: &TxEvent) {
        let _ = event;
    }

    /// After an attempt was rolled back (not after a `retry`, which waits instead).
    fn on_abort(&self, event: &TxEvent) -> Decision {
        let _ = event;
        Decision::Proceed
    }

    /// When an attempt ends, whatever the way (see the module header): committed
    /// (`reason` is `None`), aborted, waiting in `retry`, unwound by a panic, or
    /// abandoned. Called exactly once per attempt, inside the engine's commit or
    /// rollback: it must not block, park or start transactions.
    fn on_attempt_end(&self, event: &TxEvent) {
        let _ = event;
    }

    /// The contention priority of a transaction whose first attempt is beginning
    /// (replacing [`TxOptions::priority`](crate::TxOptions)), or `None` to keep the
    /// caller's. It stays fixed for every attempt of the transaction, so the
    /// [`Priority`](crate::cm::Priority) manager keeps a total order.
    fn start_priority(&self, event: &TxEvent) -> Option<i64> {
        let _ = event;
        None
    }

    /// Whether every method is the default: the engine then calls none of them. Only
    /// [`NoHooks`] says so; implementations keep the default `false`.
    fn is_noop(&self) -> bool {
        false
    }
}

/// Hooks that do nothing: the default.
#[derive(Debug, Default)]
pub struct NoHooks;

impl TxHooks for NoHooks {
    fn is_noop(&self) -> bool {
        true
    }
}
