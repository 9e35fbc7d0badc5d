//! The `pipeline` workload of TxLinux (seed 003, Section 7.5): threads (4× the
//! processors) each work through 8 phases, and the memory a transaction touches is
//! mostly private to its phase. Threads in the same phase conflict heavily (barely
//! one of them progresses at a time); threads in different phases overlap safely.
//! A transaction-aware scheduler can tell phases apart and run another phase instead
//! of a transaction bound to abort.
//!
//! # Shape
//! - Each phase has its own small array of [`TVar`]s (`words`); one more word is
//!   shared by every phase.
//! - A task works through the phases in order: `txs_per_phase` transactions in a
//!   phase, then the next phase, wrapping around after the last ([`PipelineCursor`]).
//!   Every task starts in phase 0, as a pipeline does, so the first phases start
//!   crowded and the tasks spread out only as some of them win.
//! - A transaction of phase `p` reads `reads` random words of the phase, spins
//!   `work` iterations (the longer transactions TxLinux wanted), adds 1 to `writes`
//!   random words of the phase and, with probability `shared_percent` %, adds 1 to
//!   the shared word.
//! - Its transaction id (the engine's site, LUTS's `txId`) is [`phase_site`]`(p)` =
//!   p + 1 (0 stays "no id"), so that CILUTS, CTLUTS and the conflict table can tell
//!   phases apart.
//!
//! # Invariants
//! - Every committed transaction adds exactly `writes` to the phases' words: after a
//!   run, their sum is `writes × commits` ([`Pipeline::check`]).

use lutra_stm::{Stm, TVar};
use std::hint::black_box;

/// The site (transaction id) of the transactions of phase `phase`: `phase + 1`.
pub fn phase_site(phase: usize) -> u32 {
    u32::try_from(phase + 1).expect("fewer phases than u32::MAX")
}

/// A pipeline workload's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelineWorkload {
    /// Number of phases (TxLinux: 8).
    pub phases: usize,
    /// Words of each phase's array.
    pub words: usize,
    /// Transactions a task runs in a phase before moving to the next.
    pub txs_per_phase: u32,
    /// Words of the phase each transaction reads.
    pub reads: usize,
    /// Words of the phase each transaction increments.
    pub writes: usize,
    /// Percentage of transactions that also increment the shared word.
    pub shared_percent: u32,
    /// Spin iterations inside each transaction, between its reads and its writes.
    pub work: u32,
}

impl Default for PipelineWorkload {
    /// 8 phases of 16 words, 16 transactions per phase, each reading 8 words and
    /// incrementing 2, 1 % touching the shared word, 200 spins of work.
    fn default() -> Self {
        Self {
            phases: 8,
            words: 16,
            txs_per_phase: 16,
            reads: 8,
            writes: 2,
            shared_percent: 1,
            work: 200,
        }
    }
}

/// Where a task is in the pipeline: its phase, and the transactions it has committed
/// in that phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipelineCursor {
    /// The current phase.
    pub phase: usize,
    /// Transactions committed in the current phase.
    pub done: u32,
}

impl PipelineCursor {
    /// Counts one committed transaction; after `txs_per_phase` of them, moves to the
    /// next phase (the last wraps around to phase 0).
    pub fn advance(&mut self, workload: &PipelineWorkload) {
        self.done += 1;
        if self.done >= workload.txs_per_phase.max(1) {
            self.done = 0;
            self.phase = (self.phase + 1) % workload.phases.max(1);
        }
    }
}

/// The pipeline's memory, used through one engine.
#[derive(Debug)]
pub struct Pipeline {
    stm: Stm,
    workload: PipelineWorkload,
    phases: Box<[Box<[TVar<u64>]>]>,
    shared: TVar<u64>,
}

impl Pipeline {
    /// Every word at 0, used through `stm` only.
    pub fn new(stm: Stm, workload: PipelineWorkload) -> Self {
        let words = workload.words.max(1);
        Self {
            stm,
            workload,
            phases: (0..workload.phases.max(1))
                .map(|_| (0..words).map(|_| TVar::new(0)).collect())
                .collect(),
            shared: TVar::new(0),
        }
    }

    /// The engine.
    pub fn stm(&self) -> &Stm {
        &self.stm
    }

    /// Runs one transaction of the cursor's phase, then advances the cursor.
    pub fn step(&self, cursor: &mut PipelineCursor, rng: &mut fastrand::Rng) {
        let workload = &self.workload;
        let words = &self.phases[cursor.phase];
        let reads: Vec<usize> = (0..workload.reads)
            .map(|_| rng.usize(0..words.len()))
            .collect();
        let writes: Vec<usize> = (0..workload.writes)
            .map(|_| rng.usize(0..words.len()))
            .collect();
        let shared = rng.u32(0..100) < workload.shared_percent;
        self.stm
            .transaction()
            .site(phase_site(cursor.phase))
            .run(|tx| {
                let mut seen = 0u64;
                for &word in &reads {
                    seen = seen.wrapping_add(tx.read(&words[word])?);
                }
                spin(workload.work, seen);
                for &word in &writes {
                    tx.modify(&words[word], |value| value + 1)?;
                }
                if shared {
                    tx.modify(&self.shared, |value| value + 1)?;
                }
                Ok(())
            });
        cursor.advance(workload);
    }

    /// The sum of every phase's words, read in one transaction.
    pub fn phase_total(&self) -> u64 {
        self.stm.atomically(|tx| {
            let mut sum = 0;
            for word in self.phases.iter().flat_map(|words| words.iter()) {
                sum += tx.read(word)?;
            }
            Ok(sum)
        })
    }

    /// Checks the invariant after `commits` transactions and returns the phases' sum.
    ///
    /// # Panics
    /// If the sum is not `writes × commits`: an increment was lost or doubled.
    pub fn check(&self, commits: u64) -> u64 {
        let total = self.phase_total();
        assert_eq!(
            total,
            self.workload.writes as u64 * commits,
            "the pipeline's words lost or doubled an increment"
        );
        total
    }
}

/// `iterations` rounds of cheap arithmetic the optimiser cannot remove.
pub(crate) fn spin(iterations: u32, seed: u64) {
    let mut value = seed;
    for round in 0..iterations {
        value = black_box(
            value
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(u64::from(round)),
        );
    }
    black_box(value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::thread_rng;

    #[test]
    fn a_cursor_works_through_the_phases_in_order_and_wraps() {
        let workload = PipelineWorkload {
            phases: 3,
            txs_per_phase: 2,
            ..PipelineWorkload::default()
        };
        let mut cursor = PipelineCursor::default();
        let mut phases = Vec::new();
        for _ in 0..8 {
            phases.push(cursor.phase);
            cursor.advance(&workload);
        }
        assert_eq!(phases, [0, 0, 1, 1, 2, 2, 0, 0]);
    }

    #[test]
    fn transactions_use_their_phase_as_site_and_keep_the_invariant() {
        let workload = PipelineWorkload {
            phases: 4,
            txs_per_phase: 3,
            work: 0,
            ..PipelineWorkload::default()
        };
        let pipeline = Pipeline::new(Stm::default(), workload);
        let (mut cursor, mut rng) = (PipelineCursor::default(), thread_rng(0));
        for _ in 0..24 {
            pipeline.step(&mut cursor, &mut rng);
        }
        assert_eq!(pipeline.check(24), 48);
        let stats = pipeline.stm().stats();
        for phase in 0..4 {
            assert_eq!(
                stats.by_site[&phase_site(phase)].commits,
                6,
                "phase {phase}"
            );
        }
    }
}
