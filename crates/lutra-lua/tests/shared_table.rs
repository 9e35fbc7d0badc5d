//! A shared table against a sequential model, and under concurrent transfers.
//!
//! - `matches_a_hash_map_model`: random sequences of gets, sets, deletes, `#`,
//!   `pairs`, transactions that commit, transactions that abort, and `or_else`
//!   branches that retry (their changes undone) — each checked against a `HashMap`
//!   that applies only what commits. Transactions change the index in place, so this
//!   also checks that an abort or a rolled-back branch leaves nothing behind.
//! - `transfers_with_inserts_and_removals_conserve_the_total`: more threads than
//!   cores move amounts between entries, creating and removing keys on the way (so
//!   the index is replaced while others read it); the total never changes, in any
//!   snapshot and at the end.

use lutra_lua::shared::{Key, SharedTable, Stored};
use lutra_stm::{Abort, AbortReason, Stm, Transaction, TxDescriptor, TxOptions};
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;

/// Keys of the model: small integers (so borders move) and a few strings.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum K {
    Int(i64),
    Str(&'static str),
}

impl K {
    fn key(&self) -> Key {
        match self {
            K::Int(i) => Key::Integer(*i),
            K::Str(s) => Key::String(Arc::from(s.as_bytes())),
        }
    }
}

/// One step of a transaction's body.
#[derive(Clone, Debug)]
enum Op {
    Get(K),
    Set(K, i64),
    Delete(K),
    Border,
    Pairs,
    /// An `or_else` whose first branch runs these steps, then retries: the steps are
    /// undone and the second branch (doing nothing) runs.
    RetriedBranch(Vec<Op>),
}

/// A top-level step: a single access as its own transaction, or several in one.
#[derive(Clone, Debug)]
enum Step {
    Single(Op),
    Atomic { ops: Vec<Op>, commit: bool },
}

fn key() -> impl Strategy<Value = K> {
    prop_oneof![
        4 => (1i64..=6).prop_map(K::Int),
        1 => prop_oneof![Just("a"), Just("b"), Just("long key")].prop_map(K::Str),
    ]
}

fn plain_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => key().prop_map(Op::Get),
        4 => (key(), -5i64..100).prop_map(|(k, v)| Op::Set(k, v)),
        2 => key().prop_map(Op::Delete),
        1 => Just(Op::Border),
        1 => Just(Op::Pairs),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => plain_op(),
        1 => prop::collection::vec(plain_op(), 1..6).prop_map(Op::RetriedBranch),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => plain_op().prop_map(Step::Single),
        3 => (prop::collection::vec(op(), 1..12), any::<bool>())
            .prop_map(|(ops, commit)| Step::Atomic { ops, commit }),
    ]
}

fn as_int(stored: &Stored) -> Option<i64> {
    match stored {
        Stored::Integer(i) => Some(*i),
        Stored::Nil => None,
        other => panic!("the model stores integers only, got {other:?}"),
    }
}

/// The first border of `model`: the least `b >= 0` with `b + 1` absent.
fn first_border(model: &HashMap<K, i64>) -> i64 {
    (0..).find(|b| !model.contains_key(&K::Int(b + 1))).unwrap()
}

/// Runs `op` in `tx`, checking it against `model` (the transaction's own view, which
/// it also updates).
fn apply(
    tx: &mut Transaction<'_>,
    table: &SharedTable,
    model: &mut HashMap<K, i64>,
    op: &Op,
) -> Result<(), Abort> {
    match op {
        Op::Get(k) => {
            let got = as_int(&table.get(tx, k.key().view())?);
            assert_eq!(got, model.get(k).copied(), "get {k:?}");
        }
        Op::Set(k, v) => {
            table.set(tx, k.key(), Stored::Integer(*v))?;
            model.insert(k.clone(), *v);
        }
        Op::Delete(k) => {
            table.set(tx, k.key(), Stored::Nil)?;
            model.remove(k);
        }
        Op::Border => assert_eq!(table.border(tx)?, first_border(model), "#t"),
        Op::Pairs => {
            assert_eq!(table.count(tx)?, model.len(), "count");
            let mut seen = HashMap::new();
            for (key, cell) in table.keys(tx)? {
                let k = match key {
                    Key::Integer(i) => K::Int(i),
                    Key::String(s) => K::Str(
                        ["a", "b", "long key"]
                            .into_iter()
                            .find(|name| name.as_bytes() == &*s)
                            .unwrap(),
                    ),
                    other => panic!("unexpected key {other:?}"),
                };
                seen.insert(
                    k,
                    as_int(&cell.read(tx)?).expect("a present key holds a value"),
                );
            }
            assert_eq!(&seen, model, "pairs");
        }
        Op::RetriedBranch(ops) => {
            let mut branch = model.clone();
            tx.or_else(
                |tx| {
                    for op in ops {
                        apply(tx, table, &mut branch, op)?;
                    }
                    tx.retry::<()>()
                },
                |_| Ok(()),
            )?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn matches_a_hash_map_model(steps in prop::collection::vec(step(), 1..40)) {
        let stm = Stm::default();
        let table = SharedTable::new();
        let mut model: HashMap<K, i64> = HashMap::new();
        let mut desc = TxDescriptor::new(&stm).unwrap();
        for step in &steps {
            match step {
                Step::Single(op) => {
                    let mut view = model.clone();
                    stm.atomically(|tx| {
                        view = model.clone();
                        apply(tx, &table, &mut view, op)
                    });
                    model = view;
                }
                Step::Atomic { ops, commit } => {
                    desc.begin(TxOptions::default());
                    let mut view = model.clone();
                    for op in ops {
                        apply(&mut desc.transaction(), &table, &mut view, op)
                            .expect("a transaction alone never aborts");
                    }
                    if *commit {
                        desc.commit().unwrap();
                        model = view;
                    } else {
                        desc.rollback(AbortReason::Explicit);
                    }
                }
            }
            // What every later transaction sees is exactly what committed.
            stm.atomically(|tx| {
                let mut view = model.clone();
                apply(tx, &table, &mut view, &Op::Pairs)?;
                apply(tx, &table, &mut view, &Op::Border)
            });
        }
    }
}

/// A balance's key: integers for the sequence part, strings beyond it.
fn account(i: u64) -> Key {
    if i.is_multiple_of(2) {
        Key::Integer(i as i64 / 2 + 1)
    } else {
        Key::String(Arc::from(format!("account {i}").as_bytes()))
    }
}

fn balance(tx: &mut Transaction<'_>, table: &SharedTable, i: u64) -> Result<i64, Abort> {
    Ok(match table.get(tx, account(i).view())? {
        Stored::Integer(n) => n,
        Stored::Nil => 0,
        other => panic!("a balance is an integer, got {other:?}"),
    })
}

#[test]
fn transfers_with_inserts_and_removals_conserve_the_total() {
    const ACCOUNTS: u64 = 12;
    const START: i64 = 5;
    const THREADS: u64 = 8;
    const TRANSFERS: u64 = 1500;
    let stm = Stm::default();
    let table = Arc::new(SharedTable::new());
    stm.atomically(|tx| {
        (0..ACCOUNTS).try_for_each(|i| table.set(tx, account(i), Stored::Integer(START)))
    });
    let total = ACCOUNTS as i64 * START;
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (stm, table) = (stm.clone(), table.clone());
            s.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(t);
                for _ in 0..TRANSFERS {
                    let (from, to) = (rng.u64(0..ACCOUNTS), rng.u64(0..ACCOUNTS));
                    // An emptied account leaves the table; a missing one comes back.
                    stm.atomically(|tx| {
                        let have = balance(tx, &table, from)?;
                        let amount = have.min(3);
                        if from == to || amount == 0 {
                            return Ok(());
                        }
                        let left = have - amount;
                        let value = if left == 0 {
                            Stored::Nil
                        } else {
                            Stored::Integer(left)
                        };
                        table.set(tx, account(from), value)?;
                        let gets = balance(tx, &table, to)? + amount;
                        table.set(tx, account(to), Stored::Integer(gets))
                    });
                }
            });
        }
        // An auditor: every snapshot holds the whole total.
        let (stm, table) = (stm.clone(), table.clone());
        s.spawn(move || {
            for _ in 0..300 {
                let seen: i64 = stm.atomically(|tx| {
                    (0..ACCOUNTS)
                        .map(|i| balance(tx, &table, i))
                        .sum::<Result<i64, _>>()
                });
                assert_eq!(seen, total, "an audit saw {seen}");
            }
        });
    });
    let (sum, count) = stm.atomically(|tx| {
        let sum = (0..ACCOUNTS)
            .map(|i| balance(tx, &table, i))
            .sum::<Result<i64, _>>()?;
        Ok((sum, table.count(tx)?))
    });
    assert_eq!(sum, total);
    let nonzero = stm.atomically(|tx| {
        (0..ACCOUNTS)
            .map(|i| balance(tx, &table, i).map(|b| usize::from(b != 0)))
            .sum::<Result<usize, _>>()
    });
    assert_eq!(
        count, nonzero,
        "the index holds exactly the non-empty accounts"
    );
}
