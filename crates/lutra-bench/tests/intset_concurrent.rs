//! Every transactional set under concurrent inserts, removes and lookups from many
//! threads (more threads than cores, so transactions are preempted mid-flight), for
//! every design, checked against a sequential model:
//!
//! - per key, the initial membership plus the successful inserts minus the successful
//!   removes is 0 or 1, and is 1 exactly when the key is in the final set;
//! - keys that no thread updates ("stable" keys, interleaved with the updated ones)
//!   are always found, or never, by every lookup, however the structure around them
//!   is being rebuilt;
//! - the red-black tree keeps its invariants.
//!
//! Half the threads go through [`StmIntSet`]; the other half run the structure's
//! operations through [`Yielding`], which yields the processor now and then between
//! accesses, so that transactions are preempted in the middle far more often than a
//! time slice would.

use lutra_bench::workloads::intset::{
    Access, HashSet, IntSet, LinkedList, NodePool, RbTree, SharedIntSet, SkipList, StmIntSet,
};
use lutra_stm::{Abort, Config, DesignKind, Stm, TVar, Transaction, cm};
use std::sync::Barrier;

/// A transaction that yields the processor before one access in 16.
struct Yielding<'a, 'd> {
    tx: &'a mut Transaction<'d>,
    rng: &'a mut fastrand::Rng,
}

impl Yielding<'_, '_> {
    fn maybe_yield(&mut self) {
        if self.rng.u8(..16) == 0 {
            std::thread::yield_now();
        }
    }
}

impl Access for Yielding<'_, '_> {
    type Word = TVar<u64>;
    type Error = Abort;

    fn load(&mut self, word: &TVar<u64>) -> Result<u64, Abort> {
        self.maybe_yield();
        self.tx.read(word)
    }

    fn store(&mut self, word: &TVar<u64>, value: u64) -> Result<(), Abort> {
        self.maybe_yield();
        self.tx.write(word, value)
    }
}

/// One operation through [`Yielding`], following the [`NodePool`] protocol.
fn yielding<T>(
    stm: &Stm,
    pool: &mut NodePool,
    rng: &mut fastrand::Rng,
    op: impl Fn(&mut Yielding<'_, '_>, &mut NodePool) -> Result<T, Abort>,
) -> T {
    let result = stm.atomically(|tx| {
        pool.begin_attempt();
        op(&mut Yielding { tx, rng: &mut *rng }, pool)
    });
    pool.commit();
    result
}

/// The operations a test thread performs.
#[derive(Clone, Copy)]
enum Op {
    Insert,
    Remove,
    Contains,
}

/// Runs `op` on `key`, through [`StmIntSet`] or through [`Yielding`].
fn perform<S: IntSet<Word = TVar<u64>>>(
    set: &StmIntSet<S>,
    pool: &mut NodePool,
    rng: &mut fastrand::Rng,
    through_yielding: bool,
    op: Op,
    key: u64,
) -> bool {
    if !through_yielding {
        return match op {
            Op::Insert => set.insert(pool, key),
            Op::Remove => set.remove(pool, key),
            Op::Contains => set.contains(pool, key),
        };
    }
    let (stm, inner) = (set.stm(), set.set());
    match op {
        Op::Insert => yielding(stm, pool, rng, |a, pool| inner.insert(a, pool, key)),
        Op::Remove => yielding(stm, pool, rng, |a, pool| inner.remove(a, pool, key)),
        Op::Contains => yielding(stm, pool, rng, |a, _| inner.contains(a, key)),
    }
}

/// Keys `0..4 * UPDATED`: keys ≡ 0 (mod 2) are updated; keys ≡ 1 (mod 4) are stable and
/// present, keys ≡ 3 (mod 4) stable and absent.
const UPDATED: u64 = 48;
const RANGE: u64 = 2 * UPDATED;

fn engine(design: DesignKind, manager: &str) -> Stm {
    Stm::new(
        Config::default()
            .with_design(design)
            .with_shared_manager(cm::by_name(manager).unwrap())
            .with_orec_bits(14),
    )
}

/// Runs the concurrent workload and checks the model; returns the set for further
/// checks.
fn hammer<S: IntSet<Word = TVar<u64>>>(stm: Stm, threads: usize, ops: usize) -> StmIntSet<S> {
    let set = StmIntSet::<S>::new(stm, RANGE as usize / 2);
    let mut initial = vec![0i64; RANGE as usize];
    let mut pool = set.handle();
    for key in 0..RANGE {
        let present = key % 4 == 1 || (key % 2 == 0 && key % 3 == 0);
        if present {
            assert!(set.insert(&mut pool, key));
            initial[key as usize] = 1;
        }
    }
    drop(pool);
    let barrier = Barrier::new(threads);
    let nets: Vec<Vec<i64>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|thread| {
                let (set, barrier) = (&set, &barrier);
                scope.spawn(move || {
                    let mut rng = fastrand::Rng::with_seed(thread as u64 + 1);
                    let mut yields = rng.fork();
                    let mut pool = set.handle();
                    let mut net = vec![0i64; RANGE as usize];
                    let through_yielding = thread % 2 == 1;
                    barrier.wait();
                    for _ in 0..ops {
                        let updated = 2 * rng.u64(0..UPDATED);
                        let stable = 2 * rng.u64(0..UPDATED) + 1;
                        let mut run = |op, key| {
                            perform(set, &mut pool, &mut yields, through_yielding, op, key)
                        };
                        match rng.u32(0..4) {
                            0 => net[updated as usize] += i64::from(run(Op::Insert, updated)),
                            1 => net[updated as usize] -= i64::from(run(Op::Remove, updated)),
                            2 => {
                                run(Op::Contains, updated);
                            }
                            _ => assert_eq!(
                                run(Op::Contains, stable),
                                stable % 4 == 1,
                                "lookup of stable key {stable}"
                            ),
                        }
                    }
                    net
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().unwrap())
            .collect()
    });
    let members = set.elements();
    for key in 0..RANGE {
        let count = initial[key as usize] + nets.iter().map(|net| net[key as usize]).sum::<i64>();
        assert!(count == 0 || count == 1, "key {key}: net count {count}");
        assert_eq!(
            count == 1,
            members.binary_search(&key).is_ok(),
            "key {key}: counted {count}, membership disagrees"
        );
    }
    set
}

fn every_design<S: IntSet<Word = TVar<u64>>>(ops: usize) {
    for design in DesignKind::ALL {
        let set = hammer::<S>(engine(design, "backoff"), 16, ops);
        let stats = set.stm().stats().total;
        assert_eq!(
            stats.commits,
            stats.starts - stats.total_aborts() - stats.retry_waits
        );
    }
}

#[test]
fn linked_list_under_concurrency() {
    every_design::<LinkedList<TVar<u64>>>(2000);
}

#[test]
fn skip_list_under_concurrency() {
    every_design::<SkipList<TVar<u64>>>(3000);
}

#[test]
fn hash_set_under_concurrency() {
    every_design::<HashSet<TVar<u64>>>(4000);
}

#[test]
fn rb_tree_under_concurrency_keeps_its_invariants() {
    for design in DesignKind::ALL {
        let set = hammer::<RbTree<TVar<u64>>>(engine(design, "timestamp"), 24, 2000);
        let snapshot = set.stm().atomically(|tx| set.set().snapshot(tx));
        let size = snapshot
            .check()
            .unwrap_or_else(|violation| panic!("{design:?}: {violation}"));
        assert_eq!(size, set.elements().len());
    }
}

/// Every contention manager keeps the sets correct (shorter runs, two structures).
#[test]
fn every_manager_keeps_the_model() {
    for manager in cm::NAMES {
        for design in DesignKind::ALL {
            hammer::<RbTree<TVar<u64>>>(engine(design, manager), 16, 400);
            hammer::<SkipList<TVar<u64>>>(engine(design, manager), 16, 400);
        }
    }
}
