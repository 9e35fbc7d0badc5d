//! Contention intensity (Yoo and Lee's ATS, reused by CILUTS; seed 004 Section 3.3.1):
//! `CI = α·CI + (1 − α)·CC`, evaluated when an attempt ends, with `CC` = 1 for an
//! abort caused by contention and 0 for a commit. CI starts at 0.
//!
//! # Choices
//! - CI is kept per agent (task, or thread outside tasks): ATS keeps it per thread and
//!   LUTS's "each transaction maintains internally" is tinySTM's per-thread
//!   descriptor; a task is Lutra's thread of transactions.
//! - Contention is a conflict abort (`AbortReason::is_conflict`) or giving way to an
//!   irrevocable transaction. Explicit, capacity, panic and misuse aborts say nothing
//!   about contention, and a `retry` is a wait: none of them changes CI.
//!
//! With α = 0.75, CI crosses the 0.5 threshold after three aborts in a row from 0
//! (0.25, 0.4375, 0.578) and falls back below it after one commit (0.434).

use super::agents::AgentMap;
use lutra_stm::{AbortReason, TxEvent};

/// Weight of the history in the contention intensity (the papers' α).
pub const ALPHA: f64 = 0.75;
/// CI above which ATS serialises and CILUTS switches away.
pub const CI_THRESHOLD: f64 = 0.5;

/// How an attempt ended, as the policies count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// Committed.
    Commit,
    /// Aborted by contention: a conflict, or giving way to an irrevocable transaction.
    Contention,
    /// Anything else (`retry`, explicit, capacity, panic, misuse).
    Other,
}

impl End {
    /// Classifies the `reason` of an attempt's end (`None`: committed).
    pub(crate) fn of(reason: Option<AbortReason>) -> Self {
        match reason {
            None => Self::Commit,
            Some(reason) if reason.is_conflict() || reason == AbortReason::Irrevocable => {
                Self::Contention
            }
            Some(_) => Self::Other,
        }
    }

    /// The current contention `CC` this end reports, if any (0 or 1).
    pub(crate) fn contention(self) -> Option<f64> {
        match self {
            Self::Commit => Some(0.0),
            Self::Contention => Some(1.0),
            Self::Other => None,
        }
    }
}

/// One exponential-moving-average step: `α·old + (1 − α)·sample`.
pub(crate) fn ema(old: f64, sample: f64, alpha: f64) -> f64 {
    alpha * old + (1.0 - alpha) * sample
}

/// CI per agent.
pub(crate) struct Intensities {
    by_agent: AgentMap<f64>,
}

impl Intensities {
    pub(crate) fn new() -> Self {
        Self {
            by_agent: AgentMap::new(),
        }
    }

    /// The CI of `agent` (0 for an agent never seen).
    pub(crate) fn get(&self, agent: u64) -> f64 {
        self.by_agent.with(agent, |ci| *ci)
    }

    /// Evaluates the CI equation for the end of an attempt of `agent`.
    pub(crate) fn record(&self, agent: u64, event: &TxEvent) {
        if let Some(cc) = End::of(event.reason).contention() {
            self.by_agent.with(agent, |ci| *ci = ema(*ci, cc, ALPHA));
        }
    }
}
