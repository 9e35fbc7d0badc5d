//! CTLUTS (seed 004 Section 3.3.2, Listing 4): a conflict table estimates, for each
//! pair of transaction ids `(a, b)`, the probability that `a` aborts while `b` runs;
//! a vector holds the id each worker runs. A start whose estimated conflict with a
//! running transaction is above 0.5 switches to a task running another transaction.
//!
//! Transaction ids are engine sites (`Stm::transaction().site(id)`; 0 when none, which
//! is an id too); LUTS tells transactions apart by the address of their first
//! instruction. Ids are mapped on first use to rows of the table (at most `max_ids`;
//! further ids are not tracked: they never switch and update nothing).
//!
//! # Protocol
//! 1. `on_start`: announce the id (`set_tx_id`, LUTS's `luts_setid`). Unless this
//!    attempt's start already switched once, look at every worker's entry of the
//!    active vector: if one holds an id `b` with `P(id, b) > 0.5`, mark the slot and
//!    answer `SwitchAway` (the engine runs LUTS's switch, then asks again). Otherwise
//!    (and after the one switch) set the own worker's entry to the id and proceed.
//! 2. `on_attempt_end`: clear the entry the attempt set; then for every other valid
//!    entry `b`: after a commit `P(id, b) ← α·P`, after a contention abort
//!    `P(id, b) ← α·P + (1 − α)` (α = 0.75; the paper leaves the step open: this is the
//!    CI equation per pair). Other ends change nothing.
//!
//! # Invariants
//! - Table and vector are relaxed atomics, read and written without synchronisation:
//!   as in the paper, races lose updates or read stale ids (benign imprecision), but
//!   there is no undefined behaviour.
//! - Active entries hold `row + 1`, 0 meaning invalid. An attempt clears only the entry
//!   it set, and only if it still holds its row (a task suspended inside an attempt
//!   may have been overwritten by another task of the same worker).

use super::agents::{SlotMarks, SlotWords};
use super::intensity::{ALPHA, End, ema};
use lutra_stm::{Decision, TxEvent, TxHooks};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Estimated conflict probability above which a start switches away.
pub const CT_THRESHOLD: f64 = 0.5;
/// Transaction ids tracked by default.
pub const DEFAULT_MAX_IDS: usize = 64;

/// Hooks of the CTLUTS policy (conflict table, per-worker active ids, threshold 0.5).
pub struct Ctluts {
    /// Site + 1 of each row, 0 for a free row (open addressing).
    ids: Box<[AtomicU64]>,
    /// `P(a, b)` at `a * ids.len() + b`, as `f32` bits.
    table: Box<[AtomicU32]>,
    /// Row + 1 of the transaction each worker runs, 0 for none.
    active: Box<[AtomicU32]>,
    /// Worker + 1 whose entry each slot's attempt set.
    registered: SlotWords,
    switched: SlotMarks,
}

impl Ctluts {
    /// A policy for `workers` workers (worker indices at or above it are not tracked)
    /// and [`DEFAULT_MAX_IDS`] transaction ids.
    pub fn new(workers: usize) -> Self {
        Self::with_max_ids(workers, DEFAULT_MAX_IDS)
    }

    /// A policy for `workers` workers and at most `max_ids` transaction ids (the
    /// table has `max_ids²` entries).
    pub fn with_max_ids(workers: usize, max_ids: usize) -> Self {
        let max_ids = max_ids.max(1);
        let words = |n: usize| (0..n).map(|_| AtomicU32::new(0)).collect();
        Self {
            ids: (0..max_ids).map(|_| AtomicU64::new(0)).collect(),
            table: words(max_ids * max_ids),
            active: words(workers.max(1)),
            registered: SlotWords::new(),
            switched: SlotMarks::new(),
        }
    }

    /// The estimated probability that transaction `site` aborts while `other` runs
    /// (0 for ids never seen).
    pub fn probability(&self, site: u32, other: u32) -> f64 {
        match (self.row(site, false), self.row(other, false)) {
            (Some(a), Some(b)) => self.p(a, b),
            _ => 0.0,
        }
    }

    /// The transaction id worker `worker`'s entry of the active vector holds.
    pub fn running_on(&self, worker: usize) -> Option<u32> {
        let row = self.active.get(worker)?.load(Ordering::Relaxed);
        let row = (row as usize).checked_sub(1)?;
        let key = self.ids[row].load(Ordering::Relaxed).checked_sub(1)?;
        Some(key as u32)
    }

    /// The row of `site`, taking a free one if `insert` (None when the table is full).
    fn row(&self, site: u32, insert: bool) -> Option<usize> {
        let key = u64::from(site) + 1;
        let start = (site as usize).wrapping_mul(0x9E37_79B9) % self.ids.len();
        for probe in 0..self.ids.len() {
            let row = (start + probe) % self.ids.len();
            match self.ids[row].load(Ordering::Relaxed) {
                found if found == key => return Some(row),
                0 if insert => match self.ids[row].compare_exchange(
                    0,
                    key,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return Some(row),
                    Err(found) if found == key => return Some(row),
                    Err(_) => {}
                },
                0 => return None,
                _ => {}
            }
        }
        None
    }

    fn cell(&self, a: usize, b: usize) -> &AtomicU32 {
        &self.table[a * self.ids.len() + b]
    }

    fn p(&self, a: usize, b: usize) -> f64 {
        f64::from(f32::from_bits(self.cell(a, b).load(Ordering::Relaxed)))
    }

    /// Listing 4, lines 12–20: whether a running transaction likely conflicts.
    fn conflicts_with_running(&self, row: usize) -> bool {
        self.active.iter().any(|entry| {
            let other = entry.load(Ordering::Relaxed) as usize;
            other != 0 && self.p(row, other - 1) > CT_THRESHOLD
        })
    }

    /// Listing 4, line 22.
    fn register(&self, slot: usize, row: usize) {
        let Some(worker) = crate::worker_index().filter(|&w| w < self.active.len()) else {
            return;
        };
        self.active[worker].store(row as u32 + 1, Ordering::Relaxed);
        self.registered.store(slot, worker + 1);
    }

    /// Listing 4, lines 25 and 35.
    fn unregister(&self, slot: usize, row: usize) {
        if let Some(worker) = self.registered.take(slot).checked_sub(1) {
            let _ = self.active[worker].compare_exchange(
                row as u32 + 1,
                0,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    /// Listing 4, lines 26–31 and 36–41.
    fn learn(&self, row: usize, contention: f64) {
        for entry in self.active.iter() {
            let other = entry.load(Ordering::Relaxed) as usize;
            if other == 0 {
                continue;
            }
            let cell = self.cell(row, other - 1);
            let p = ema(self.p(row, other - 1), contention, ALPHA);
            cell.store((p as f32).to_bits(), Ordering::Relaxed);
        }
    }
}

impl TxHooks for Ctluts {
    fn on_start(&self, event: &TxEvent) -> Decision {
        crate::set_tx_id(u64::from(event.site));
        let Some(row) = self.row(event.site, true) else {
            return Decision::Proceed;
        };
        if !self.switched.take(event.slot) && self.conflicts_with_running(row) {
            self.switched.set(event.slot);
            return Decision::SwitchAway;
        }
        self.register(event.slot, row);
        Decision::Proceed
    }

    fn on_attempt_end(&self, event: &TxEvent) {
        let Some(row) = self.row(event.site, false) else {
            return;
        };
        self.unregister(event.slot, row);
        if let Some(contention) = End::of(event.reason).contention() {
            self.learn(row, contention);
        }
    }
}
