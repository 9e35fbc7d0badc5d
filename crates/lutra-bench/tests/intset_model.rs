//! Single-threaded property tests: every structure, run transactionally and directly,
//! against `BTreeSet` as the model, operation by operation.

use lutra_bench::workloads::intset::{
    HashSet, IntSet, LinkedList, PlainWord, RbTree, Sequential, SharedIntSet, SkipList, StmIntSet,
};
use lutra_stm::{Config, Stm, TVar};
use proptest::prelude::*;
use std::collections::BTreeSet;

#[derive(Clone, Copy, Debug)]
enum Op {
    Insert(u64),
    Remove(u64),
    Contains(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..48u64).prop_map(Op::Insert),
        (0..48u64).prop_map(Op::Remove),
        (0..48u64).prop_map(Op::Contains),
    ]
}

fn apply_model(model: &mut BTreeSet<u64>, op: Op) -> bool {
    match op {
        Op::Insert(key) => model.insert(key),
        Op::Remove(key) => model.remove(&key),
        Op::Contains(key) => model.contains(&key),
    }
}

fn check_transactional<S: IntSet<Word = TVar<u64>>>(ops: &[Op]) -> Result<(), TestCaseError> {
    let set = StmIntSet::<S>::new(Stm::new(Config::default().with_orec_bits(12)), 16);
    let mut pool = set.handle();
    let mut model = BTreeSet::new();
    for &op in ops {
        let got = match op {
            Op::Insert(key) => set.insert(&mut pool, key),
            Op::Remove(key) => set.remove(&mut pool, key),
            Op::Contains(key) => set.contains(&mut pool, key),
        };
        prop_assert_eq!(got, apply_model(&mut model, op), "{:?}", op);
    }
    prop_assert_eq!(set.elements(), model.into_iter().collect::<Vec<_>>());
    Ok(())
}

fn check_sequential<S: IntSet<Word = PlainWord>>(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut set = Sequential::<S>::new(16);
    let mut model = BTreeSet::new();
    for &op in ops {
        let got = match op {
            Op::Insert(key) => set.insert(key),
            Op::Remove(key) => set.remove(key),
            Op::Contains(key) => set.contains(key),
        };
        prop_assert_eq!(got, apply_model(&mut model, op), "{:?}", op);
    }
    prop_assert_eq!(set.elements(), model.into_iter().collect::<Vec<_>>());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn list_matches_the_model(ops in prop::collection::vec(op(), 0..300)) {
        check_transactional::<LinkedList<TVar<u64>>>(&ops)?;
        check_sequential::<LinkedList<PlainWord>>(&ops)?;
    }

    #[test]
    fn skip_list_matches_the_model(ops in prop::collection::vec(op(), 0..300)) {
        check_transactional::<SkipList<TVar<u64>>>(&ops)?;
        check_sequential::<SkipList<PlainWord>>(&ops)?;
    }

    #[test]
    fn hash_set_matches_the_model(ops in prop::collection::vec(op(), 0..300)) {
        check_transactional::<HashSet<TVar<u64>>>(&ops)?;
        check_sequential::<HashSet<PlainWord>>(&ops)?;
    }

    #[test]
    fn rb_tree_matches_the_model_and_stays_balanced(ops in prop::collection::vec(op(), 0..300)) {
        check_transactional::<RbTree<TVar<u64>>>(&ops)?;
        let mut set = Sequential::<RbTree<PlainWord>>::new(16);
        let mut model = BTreeSet::new();
        for &op in &ops {
            let got = match op {
                Op::Insert(key) => set.insert(key),
                Op::Remove(key) => set.remove(key),
                Op::Contains(key) => set.contains(key),
            };
            prop_assert_eq!(got, apply_model(&mut model, op));
            let Ok(snapshot) = set.set().snapshot(&mut lutra_bench::workloads::intset::Direct);
            let size = snapshot.check().map_err(TestCaseError::fail)?;
            prop_assert_eq!(size, model.len());
        }
    }
}

/// Ascending and descending runs are the rotation-heavy cases of a red-black tree.
#[test]
fn rb_tree_survives_sorted_inserts_and_removes() {
    let mut set = Sequential::<RbTree<PlainWord>>::new(16);
    let check = |set: &Sequential<RbTree<PlainWord>>| {
        let Ok(snapshot) = set
            .set()
            .snapshot(&mut lutra_bench::workloads::intset::Direct);
        snapshot.check().unwrap()
    };
    for key in 0..500 {
        assert!(set.insert(key));
    }
    assert_eq!(check(&set), 500);
    for key in (500..1000).rev() {
        assert!(set.insert(key));
    }
    assert_eq!(check(&set), 1000);
    for key in (0..1000).step_by(3) {
        assert!(set.remove(key));
        check(&set);
    }
    for key in (0..1000).rev() {
        assert_eq!(set.remove(key), key % 3 != 0);
    }
    assert_eq!(check(&set), 0);
}
