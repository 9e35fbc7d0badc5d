//! Property test: random transaction programs run concurrently must equal some
//! one-at-a-time order.
//!
//! A program gives each of 3 threads a list of 3 small transactions over 3 `TVar<i64>`
//! (read x, write x := c, x += y, write x := c if y > t). Each transaction returns the
//! values it read. After running the threads concurrently (with yields inside the
//! transactions to interleave them on 2 cores), a depth-first search with memoization
//! looks for a serial order, consistent with each thread's program order, whose replay
//! on a sequential model returns the same values for every transaction and ends in the
//! same state. Both designs, several contention managers, and record tables from 2
//! records (every variable collides) to 2^20.

mod common;

use common::{all_configs, config};
use lutra_stm::{DesignKind, Stm, TVar, Transaction};
use proptest::prelude::*;
use std::collections::HashSet;
use std::sync::{Arc, Barrier};

const VARS: usize = 3;
const THREADS: usize = 3;
const TXS_PER_THREAD: usize = 3;
/// Concurrent runs of each generated program.
const RUNS: usize = 3;

#[derive(Clone, Copy, Debug)]
enum Op {
    Read(usize),
    Write(usize, i64),
    /// `dst += src` (reads `src`, then `dst`).
    AddFrom {
        dst: usize,
        src: usize,
    },
    /// Reads `cond`; if it is above `threshold`, `dst := value`.
    WriteIfAbove {
        cond: usize,
        threshold: i64,
        dst: usize,
        value: i64,
    },
}

type Tx = Vec<Op>;
type Program = Vec<Vec<Tx>>;
type State = [i64; VARS];

fn op() -> impl Strategy<Value = Op> {
    let var = 0..VARS;
    prop_oneof![
        var.clone().prop_map(Op::Read),
        (var.clone(), -3i64..=3).prop_map(|(x, c)| Op::Write(x, c)),
        (var.clone(), var.clone()).prop_map(|(dst, src)| Op::AddFrom { dst, src }),
        (var.clone(), -2i64..=2, var, -3i64..=3).prop_map(|(cond, threshold, dst, value)| {
            Op::WriteIfAbove {
                cond,
                threshold,
                dst,
                value,
            }
        }),
    ]
}

fn program() -> impl Strategy<Value = Program> {
    let tx = prop::collection::vec(op(), 1..=4);
    let thread = prop::collection::vec(tx, TXS_PER_THREAD);
    prop::collection::vec(thread, THREADS)
}

/// Runs `ops` in a transaction; returns every value read, in order.
fn run_on_stm(
    tx: &mut Transaction<'_>,
    vars: &[TVar<i64>],
    ops: &[Op],
) -> Result<Vec<i64>, lutra_stm::Abort> {
    let mut seen = Vec::new();
    for (at, op) in ops.iter().enumerate() {
        if at % 2 == 1 {
            std::thread::yield_now();
        }
        match *op {
            Op::Read(x) => seen.push(tx.read(&vars[x])?),
            Op::Write(x, c) => tx.write(&vars[x], c)?,
            Op::AddFrom { dst, src } => {
                let add = tx.read(&vars[src])?;
                let old = tx.read(&vars[dst])?;
                seen.extend([add, old]);
                tx.write(&vars[dst], old + add)?;
            }
            Op::WriteIfAbove {
                cond,
                threshold,
                dst,
                value,
            } => {
                let c = tx.read(&vars[cond])?;
                seen.push(c);
                if c > threshold {
                    tx.write(&vars[dst], value)?;
                }
            }
        }
    }
    Ok(seen)
}

/// The sequential model of `run_on_stm`.
fn run_on_model(state: &mut State, ops: &[Op]) -> Vec<i64> {
    let mut seen = Vec::new();
    for op in ops {
        match *op {
            Op::Read(x) => seen.push(state[x]),
            Op::Write(x, c) => state[x] = c,
            Op::AddFrom { dst, src } => {
                let (add, old) = (state[src], state[dst]);
                seen.extend([add, old]);
                state[dst] = old + add;
            }
            Op::WriteIfAbove {
                cond,
                threshold,
                dst,
                value,
            } => {
                seen.push(state[cond]);
                if state[cond] > threshold {
                    state[dst] = value;
                }
            }
        }
    }
    seen
}

const INITIAL: State = [1, 0, -1];

/// What one concurrent run produced: the reads of every transaction and the end state.
struct Observed {
    reads: Vec<Vec<Vec<i64>>>,
    end: State,
}

fn run_concurrently(stm: &Stm, program: &Program) -> Observed {
    let vars: Arc<Vec<TVar<i64>>> = Arc::new(INITIAL.iter().map(|&v| TVar::new(v)).collect());
    let start = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = program
        .iter()
        .cloned()
        .map(|txs| {
            let (stm, vars, start) = (stm.clone(), vars.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                txs.iter()
                    .map(|ops| stm.atomically(|tx| run_on_stm(tx, &vars, ops)))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let reads = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let end = stm.atomically(|tx| Ok([tx.read(&vars[0])?, tx.read(&vars[1])?, tx.read(&vars[2])?]));
    Observed { reads, end }
}

/// Whether some interleaving of the threads' transactions, replayed one at a time,
/// explains `observed`.
fn serializable(program: &Program, observed: &Observed) -> bool {
    fn search(
        program: &Program,
        observed: &Observed,
        next: &mut [usize; THREADS],
        state: State,
        failed: &mut HashSet<([usize; THREADS], State)>,
    ) -> bool {
        if next.iter().all(|&n| n == TXS_PER_THREAD) {
            return state == observed.end;
        }
        if failed.contains(&(*next, state)) {
            return false;
        }
        for thread in 0..THREADS {
            let at = next[thread];
            if at == TXS_PER_THREAD {
                continue;
            }
            let mut after = state;
            if run_on_model(&mut after, &program[thread][at]) != observed.reads[thread][at] {
                continue;
            }
            next[thread] += 1;
            let found = search(program, observed, next, after, failed);
            next[thread] -= 1;
            if found {
                return true;
            }
        }
        failed.insert((*next, state));
        false
    }
    search(
        program,
        observed,
        &mut [0; THREADS],
        INITIAL,
        &mut HashSet::new(),
    )
}

fn check(
    design: DesignKind,
    manager: &str,
    orec_bits: u32,
    program: &Program,
) -> Result<(), TestCaseError> {
    let stm = Stm::new(config(design, manager).with_orec_bits(orec_bits));
    for run in 0..RUNS {
        let observed = run_concurrently(&stm, program);
        prop_assert!(
            serializable(program, &observed),
            "{}/{manager}/{orec_bits} bits, run {run}: no serial order explains reads {:?} and end state {:?}",
            design.name(),
            observed.reads,
            observed.end
        );
    }
    Ok(())
}

fn managers() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "suicide",
        "backoff",
        "aggressive",
        "timestamp",
        "priority",
    ])
}

/// `Aggressive` is left out with encounter-time locking: two transactions that lock
/// the same records in opposite orders can kill each other over and over (a livelock
/// the manager documents; with the yields inside these transactions a single case
/// can take seconds). The bank and opacity stress tests still run that pair.
fn managers_without_aggressive() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "suicide",
        "backoff",
        "timestamp",
        "size_matters",
        "priority",
    ])
}

fn orec_bits() -> impl Strategy<Value = u32> {
    prop::sample::select(vec![1u32, 2, 20])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn commit_time_locking_is_serializable(program in program(), manager in managers(), bits in orec_bits()) {
        check(DesignKind::WriteBackCtl, manager, bits, &program)?;
    }

    #[test]
    fn encounter_time_locking_is_serializable(program in program(), manager in managers_without_aggressive(), bits in orec_bits()) {
        check(DesignKind::WriteBackEtl, manager, bits, &program)?;
    }
}

/// The sweep above samples managers; this one runs fewer programs, but through every
/// design with every contention manager, so none is left out by chance.
#[test]
fn every_design_and_manager_is_serializable() {
    use proptest::test_runner::{Config as RunnerConfig, TestRunner};
    for (design, manager) in all_configs() {
        let mut runner = TestRunner::new(RunnerConfig {
            cases: 12,
            failure_persistence: None,
            ..RunnerConfig::default()
        });
        let result = runner.run(&(program(), orec_bits()), |(program, bits)| {
            check(design, manager, bits, &program)
        });
        if let Err(failure) = result {
            panic!("{design:?} with {manager}: {failure}");
        }
    }
}

/// The checker itself: a lost update has no serial explanation.
#[test]
fn the_checker_rejects_a_lost_update() {
    let increment = vec![Op::AddFrom { dst: 1, src: 0 }];
    let program: Program = vec![
        vec![increment.clone(), vec![Op::Read(1)], vec![Op::Read(2)]],
        vec![increment, vec![Op::Read(1)], vec![Op::Read(2)]],
        vec![vec![Op::Read(0)], vec![Op::Read(0)], vec![Op::Read(0)]],
    ];
    // Both increments read var1 == 0: one update is lost, whatever the order.
    let lost = Observed {
        reads: vec![
            vec![vec![1, 0], vec![1], vec![-1]],
            vec![vec![1, 0], vec![1], vec![-1]],
            vec![vec![1], vec![1], vec![1]],
        ],
        end: [1, 1, -1],
    };
    assert!(!serializable(&program, &lost));
    let fine = Observed {
        reads: vec![
            vec![vec![1, 0], vec![2], vec![-1]],
            vec![vec![1, 1], vec![2], vec![-1]],
            vec![vec![1], vec![1], vec![1]],
        ],
        end: [1, 2, -1],
    };
    assert!(serializable(&program, &fine));
}
