//! The `intset` workload: keys drawn uniformly from a range twice the initial size, an
//! update rate split evenly between inserts and removes, lookups for the rest (as in
//! tinySTM's and synchrobench's `intset`, without the "alternate" mode: about half of
//! the updates find their key already present or absent and change nothing, which
//! keeps the size near its initial value).
//!
//! [`IntsetWorkload::measure`] runs it on any [`Contender`].

use crate::harness::contender::Contender;
use crate::harness::measure::{Run, Sample, counters_since, timed};
use crate::workloads::intset::{
    HashSet, IntSet, LinkedList, PlainWord, RbTree, Sequential, SharedIntSet, SkipList, StmIntSet,
    Structure,
};
use crate::workloads::thread_rng;
use lutra_stm::{Stm, TVar};
use std::hint::black_box;
use std::sync::{Mutex, RwLock};
use std::time::Duration;

/// One operation of the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Add the key.
    Insert(u64),
    /// Remove the key.
    Remove(u64),
    /// Look the key up.
    Contains(u64),
}

/// An `intset` workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntsetWorkload {
    /// The structure under test.
    pub structure: Structure,
    /// Keys inserted before measuring; keys are drawn from `0..2 * initial`.
    pub initial: usize,
    /// Percentage of operations that are updates (half inserts, half removes).
    pub update_percent: u32,
}

impl IntsetWorkload {
    /// The key range, `2 · initial`.
    pub fn range(&self) -> u64 {
        2 * self.initial.max(1) as u64
    }

    /// Draws the next operation.
    pub fn next_op(&self, rng: &mut fastrand::Rng) -> Op {
        let key = rng.u64(0..self.range());
        let roll = rng.u32(0..200);
        if roll < self.update_percent {
            Op::Insert(key)
        } else if roll < 2 * self.update_percent {
            Op::Remove(key)
        } else {
            Op::Contains(key)
        }
    }

    /// Inserts random keys through `insert` until `initial` were new.
    pub fn populate(&self, mut insert: impl FnMut(u64) -> bool) {
        let mut rng = thread_rng(usize::MAX);
        let mut added = 0;
        while added < self.initial {
            added += usize::from(insert(rng.u64(0..self.range())));
        }
    }

    /// Measures `contender` on `threads` threads for `duration`.
    pub fn measure(&self, contender: Contender, threads: usize, duration: Duration) -> Sample {
        match self.structure {
            Structure::List => self.measure_as::<LinkedList<TVar<u64>>, LinkedList<PlainWord>>(
                contender, threads, duration,
            ),
            Structure::Skip => self.measure_as::<SkipList<TVar<u64>>, SkipList<PlainWord>>(
                contender, threads, duration,
            ),
            Structure::RbTree => self
                .measure_as::<RbTree<TVar<u64>>, RbTree<PlainWord>>(contender, threads, duration),
            Structure::Hash => self
                .measure_as::<HashSet<TVar<u64>>, HashSet<PlainWord>>(contender, threads, duration),
        }
    }

    /// [`IntsetWorkload::measure`] with `T` the transactional and `P` the plain
    /// variant of the structure.
    fn measure_as<T, P>(&self, contender: Contender, threads: usize, duration: Duration) -> Sample
    where
        T: IntSet<Word = TVar<u64>>,
        P: IntSet<Word = PlainWord>,
    {
        match contender {
            Contender::Sequential | Contender::Ceiling => {
                let init = |index| (self.filled::<P>(), thread_rng(index));
                let run = timed(threads, duration, init, |(set, rng)| {
                    self.apply_sequential(set, rng)
                });
                Sample {
                    run,
                    ..Sample::default()
                }
            }
            Contender::Mutex => {
                self.measure_locked(&Mutex::new(self.filled::<P>()), threads, duration)
            }
            Contender::RwLock => {
                self.measure_locked(&RwLock::new(self.filled::<P>()), threads, duration)
            }
            Contender::Stm { .. } => {
                let stm = contender.engine().expect("an STM contender has an engine");
                self.measure_stm::<T>(stm, threads, duration)
            }
        }
    }

    fn filled<P: IntSet<Word = PlainWord>>(&self) -> Sequential<P> {
        let mut set = Sequential::new(self.initial);
        self.populate(|key| set.insert(key));
        set
    }

    fn measure_locked(
        &self,
        set: &impl SharedIntSet,
        threads: usize,
        duration: Duration,
    ) -> Sample {
        let run = self.run_shared(set, threads, duration);
        Sample {
            run,
            ..Sample::default()
        }
    }

    fn measure_stm<T: IntSet<Word = TVar<u64>>>(
        &self,
        stm: Stm,
        threads: usize,
        duration: Duration,
    ) -> Sample {
        let set = StmIntSet::<T>::new(stm.clone(), self.initial);
        let mut pool = set.handle();
        self.populate(|key| set.insert(&mut pool, key));
        drop(pool);
        let before = stm.stats().total;
        let run = self.run_shared(&set, threads, duration);
        let stats = counters_since(&stm.stats().total, &before);
        Sample {
            run,
            stats: Some(stats),
            final_total: Some(set.elements().len() as i64),
        }
    }

    /// Draws the next operation and applies it to `set` through `handle`.
    pub fn apply<S: SharedIntSet>(
        &self,
        set: &S,
        handle: &mut S::Handle<'_>,
        rng: &mut fastrand::Rng,
    ) {
        let done = match self.next_op(rng) {
            Op::Insert(key) => set.insert(handle, key),
            Op::Remove(key) => set.remove(handle, key),
            Op::Contains(key) => set.contains(handle, key),
        };
        black_box(done);
    }

    /// Runs the workload on a shared set.
    pub fn run_shared<S: SharedIntSet>(&self, set: &S, threads: usize, duration: Duration) -> Run {
        let init = |index| (set.handle(), thread_rng(index));
        timed(threads, duration, init, |(handle, rng)| {
            self.apply(set, handle, rng)
        })
    }

    fn apply_sequential<P: IntSet<Word = PlainWord>>(
        &self,
        set: &mut Sequential<P>,
        rng: &mut fastrand::Rng,
    ) {
        let done = match self.next_op(rng) {
            Op::Insert(key) => set.insert(key),
            Op::Remove(key) => set.remove(key),
            Op::Contains(key) => set.contains(key),
        };
        black_box(done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_follows_the_update_rate() {
        let workload = IntsetWorkload {
            structure: Structure::Hash,
            initial: 100,
            update_percent: 20,
        };
        let mut rng = thread_rng(0);
        let ops: Vec<Op> = (0..20_000).map(|_| workload.next_op(&mut rng)).collect();
        let updates = ops
            .iter()
            .filter(|op| !matches!(op, Op::Contains(_)))
            .count();
        assert!((3_600..4_400).contains(&updates), "{updates} updates");
        assert!(ops.iter().all(|op| match op {
            Op::Insert(key) | Op::Remove(key) | Op::Contains(key) => *key < 200,
        }));
    }

    #[test]
    fn every_contender_runs_every_structure() {
        let contenders = Contender::sweep(&lutra_stm::DesignKind::ALL, &["backoff"]);
        for structure in Structure::ALL {
            let workload = IntsetWorkload {
                structure,
                initial: 32,
                update_percent: 50,
            };
            for contender in &contenders {
                let sample = workload.measure(*contender, 2, Duration::from_millis(5));
                assert!(sample.run.ops > 0, "{structure:?} {contender:?}");
                if let Some(stats) = sample.stats {
                    assert_eq!(stats.commits, sample.run.ops);
                }
            }
        }
    }
}
