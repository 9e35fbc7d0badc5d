//! Hooks a scheduler installs to hear of transaction starts, commits and aborts.
//!
//! The engine calls the hooks and hands their [`Decision`] back to whoever drives the
//! transaction (the `atomically` loop, the C ABI, a scheduler), which acts on it: the
//! engine never switches or sleeps by itself on a hook's word.

use crate::abort::AbortReason;

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
#[derive(Clone, Copy, Debug)]
pub struct TxEvent {
    /// The transaction site (id given by the caller; 0 if none).
    pub site: u32,
    /// The descriptor's registry slot.
    pub slot: usize,
    /// Attempts aborted so far in this transaction.
    pub aborts: u32,
    /// Why the attempt aborted (only for [`TxHooks::on_abort`]).
    pub reason: Option<AbortReason>,
}

/// Scheduler hooks. Every method has a default that does nothing and proceeds.
///
/// Hooks run on the transaction's own thread, outside any attempt (before `begin`,
/// after commit or rollback): they may take locks and park, but must not start
/// transactions of the same engine.
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
}

/// Hooks that do nothing: the default.
#[derive(Debug, Default)]
pub struct NoHooks;

impl TxHooks for NoHooks {}
