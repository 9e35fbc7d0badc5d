//! CILUTS (seed 004 Section 3.3.1): the contention intensity of ATS (see
//! `intensity.rs`), but a start above the threshold switches to another task instead
//! of serialising: LUTS's `luts_switch(txId)` runs a runnable task that announced a
//! different transaction id, and the worker does useful work instead of waiting.
//!
//! # Protocol
//! 1. `on_start`: announce the transaction id (the site) with `set_tx_id`, as LUTS's
//!    `luts_setid`, so that other tasks' switches can tell this one apart.
//! 2. If this attempt's start already switched once (its slot is marked), clear the
//!    mark and proceed: as in the paper, a start switches at most once, then runs (so
//!    a task with a high CI cannot be passed over forever).
//! 3. If the agent's CI > 0.5, mark the slot and answer `SwitchAway` (the engine
//!    calls [`TaskParking::switch_away`](crate::TaskParking), which is the switch,
//!    then asks again); otherwise proceed.
//! 4. `on_attempt_end`: evaluate CI.

use super::agents::{SlotMarks, current_agent};
use super::intensity::{CI_THRESHOLD, Intensities};
use lutra_stm::{Decision, TxEvent, TxHooks};

/// Hooks of the CILUTS policy (α = 0.75, threshold 0.5, switch instead of serialising).
pub struct Ciluts {
    intensity: Intensities,
    switched: SlotMarks,
}

impl Default for Ciluts {
    fn default() -> Self {
        Self::new()
    }
}

impl Ciluts {
    /// A policy with every CI at 0.
    pub fn new() -> Self {
        Self {
            intensity: Intensities::new(),
            switched: SlotMarks::new(),
        }
    }

    /// The contention intensity of the calling task (or thread).
    pub fn intensity(&self) -> f64 {
        self.intensity.get(current_agent())
    }
}

impl TxHooks for Ciluts {
    fn on_start(&self, event: &TxEvent) -> Decision {
        crate::set_tx_id(u64::from(event.site));
        if self.switched.take(event.slot) {
            return Decision::Proceed;
        }
        if self.intensity.get(current_agent()) > CI_THRESHOLD {
            self.switched.set(event.slot);
            return Decision::SwitchAway;
        }
        Decision::Proceed
    }

    fn on_attempt_end(&self, event: &TxEvent) {
        self.intensity.record(current_agent(), event);
    }
}
