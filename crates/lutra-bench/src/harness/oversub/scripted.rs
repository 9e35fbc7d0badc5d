//! A scripted conflict pattern, compared by counts: with 2 workers the policies'
//! differences hide in timing noise, but what they cost or save shows in the
//! engine's counts (aborts, time wasted in aborted attempts) and the runtime's
//! switches, for the same fixed work.
//!
//! # Script
//! Each of `tasks` tasks runs `txs_per_task` transactions, yielding after every one
//! (so the order of starts is the scheduler's, not a time slice's):
//! - even steps are **hot**: ids [`HOT_IDS`] (1 and 2, alternating, the two phases
//!   offset between neighbouring tasks) increment the one hot [`TVar`]: any two of
//!   them running at once conflict;
//! - odd steps are **cold**: id `3 + task % COLD_IDS` increments the task's own word:
//!   they never conflict.
//!
//! Every transaction reads its word, spins `work` iterations, then writes it: the spin
//! keeps an attempt open long enough for two workers to overlap.
//!
//! A policy that learns which ids conflict (CTLUTS) or which tasks waste work
//! (CILUTS, ATS, restart-profile) can run a cold transaction where a hot one would
//! abort; plain threads get whatever the kernel's time slices give.
//!
//! # Invariants
//! - Commits are fixed: `tasks × txs_per_task` per repetition. After each one the hot
//!   word holds the number of hot steps and each task's word its cold steps.

use super::{Measurement, Mode, Setup};
use crate::harness::measure::Sample;
use crate::workloads::pipeline::spin;
use lutra_stm::{Stm, TVar};
use std::sync::Arc;

/// The two conflicting transaction ids.
pub const HOT_IDS: [u32; 2] = [1, 2];
/// Number of non-conflicting ids (3, 4, …).
pub const COLD_IDS: u32 = 6;
/// Scripted tasks yield after every transaction.
pub const SCRIPT_YIELD_EVERY: u32 = 1;

/// The pattern's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConflictScript {
    /// Tasks (or threads).
    pub tasks: usize,
    /// Transactions each runs.
    pub txs_per_task: u64,
    /// Spin iterations inside each transaction.
    pub work: u32,
    /// Repetitions per mode (counts are summed).
    pub repeats: usize,
}

impl ConflictScript {
    /// A title for the screen.
    pub fn title(&self) -> String {
        format!(
            "scripted · {} tasks × {} txs (half on one hot word, ids {} and {}; half private, \
             ids 3..={}) · {} spins · sum of {} runs",
            self.tasks,
            self.txs_per_task,
            HOT_IDS[0],
            HOT_IDS[1],
            2 + COLD_IDS,
            self.work,
            self.repeats.max(1)
        )
    }

    /// Step `step` of task `task`: its transaction id, and whether it is hot.
    pub fn step(task: usize, step: u64) -> (u32, bool) {
        if step.is_multiple_of(2) {
            let turn = (step / 2 + task as u64) % 2;
            (HOT_IDS[turn as usize], true)
        } else {
            (3 + (task as u32 % COLD_IDS), false)
        }
    }

    /// Runs the pattern `repeats` times in `mode` (calling `after_each` after every
    /// repetition) and sums the counts.
    ///
    /// # Panics
    /// If a repetition breaks the invariants.
    pub fn measure(&self, setup: &Setup, mode: Mode, mut after_each: impl FnMut()) -> Measurement {
        let mut total: Option<Measurement> = None;
        for _ in 0..self.repeats.max(1) {
            let one = setup.with_runner(mode, self.tasks, SCRIPT_YIELD_EVERY, |stm, runner| {
                let words = Arc::new(Words::new(stm, self.tasks));
                let (shared, work) = (words.clone(), self.work);
                let run = runner.scripted(
                    self.tasks,
                    self.txs_per_task,
                    |task| task,
                    move |task, step| shared.run(*task, step, work),
                );
                let stats = stm.stats().total;
                let hot = words.check(self.txs_per_task);
                Sample {
                    run,
                    stats: Some(stats),
                    final_total: Some(hot as i64),
                }
            });
            after_each();
            total = Some(match total {
                None => one,
                Some(sum) => merge(sum, &one),
            });
        }
        total.expect("at least one repetition")
    }
}

/// `sum` plus `one`: operations, time, counters and switches added.
fn merge(mut sum: Measurement, one: &Measurement) -> Measurement {
    sum.sample.run.ops += one.sample.run.ops;
    sum.sample.run.elapsed += one.sample.run.elapsed;
    if let (Some(stats), Some(more)) = (sum.sample.stats.as_mut(), one.sample.stats.as_ref()) {
        stats.merge(more);
    }
    sum.switches = sum.switches.zip(one.switches).map(|(a, b)| a + b);
    sum
}

/// The pattern's memory.
struct Words {
    stm: Stm,
    hot: TVar<u64>,
    private: Box<[TVar<u64>]>,
}

impl Words {
    fn new(stm: &Stm, tasks: usize) -> Self {
        Self {
            stm: stm.clone(),
            hot: TVar::new(0),
            private: (0..tasks).map(|_| TVar::new(0)).collect(),
        }
    }

    /// Runs step `step` of task `task`.
    fn run(&self, task: usize, step: u64, work: u32) {
        let (id, hot) = ConflictScript::step(task, step);
        let word = if hot { &self.hot } else { &self.private[task] };
        self.stm.transaction().site(id).run(|tx| {
            let value = tx.read(word)?;
            spin(work, value);
            tx.write(word, value + 1)
        });
    }

    /// Checks the invariant after every task ran `txs` steps; returns the hot word.
    fn check(&self, txs: u64) -> u64 {
        let (hot_steps, cold_steps) = (txs.div_ceil(2), txs / 2);
        let (hot, private) = self.stm.atomically(|tx| {
            let hot = tx.read(&self.hot)?;
            let mut private = Vec::new();
            for word in self.private.iter() {
                private.push(tx.read(word)?);
            }
            Ok((hot, private))
        });
        assert_eq!(hot, hot_steps * self.private.len() as u64, "hot word");
        assert!(private.iter().all(|&n| n == cold_steps), "{private:?}");
        hot
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lutra_sched::policy::Policy;
    use lutra_stm::DesignKind;

    #[test]
    fn the_script_alternates_hot_and_cold() {
        let steps: Vec<(u32, bool)> = (0..4).map(|step| ConflictScript::step(1, step)).collect();
        assert_eq!(steps, [(2, true), (4, false), (1, true), (4, false)]);
        assert_eq!(ConflictScript::step(0, 0), (1, true));
    }

    #[test]
    fn counts_are_fixed_work() {
        let setup = Setup {
            design: DesignKind::WriteBackEtl,
            manager: "backoff",
            workers: 2,
            yield_every: 8,
        };
        let script = ConflictScript {
            tasks: 6,
            txs_per_task: 41,
            work: 50,
            repeats: 2,
        };
        for mode in Mode::all(&Policy::ALL) {
            let mut repetitions = 0;
            let row = script.measure(&setup, mode, || repetitions += 1);
            assert_eq!(repetitions, 2);
            assert_eq!(row.sample.run.ops, 2 * 6 * 41, "{mode:?}");
            assert_eq!(row.sample.stats.unwrap().commits, 2 * 6 * 41, "{mode:?}");
            assert_eq!(row.sample.final_total, Some(6 * 21), "{mode:?}");
        }
    }
}
