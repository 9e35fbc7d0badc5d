//! Tests of the write set, the lock set and the keyed vectors under them.

use super::*;
use crate::global::orec::PerWord;

fn entry(addr: usize, value: usize) -> WriteEntry {
    WriteEntry {
        addr,
        value,
        mask: usize::MAX,
        retire_old: None,
        record: addr / 8,
    }
}

#[test]
fn masked_updates_merge_bits() {
    let mut set = WriteSet::default();
    set.insert(WriteEntry {
        addr: 8,
        value: 0x00ff,
        mask: 0x00ff,
        retire_old: None,
        record: 1,
    });
    assert!(set.update(8, 0xab00, 0xff00));
    let written = set.get(8).unwrap();
    assert_eq!(written.mask, 0xffff);
    assert_eq!(written.merged_with(0x1234_0000), 0x1234_abff);
}

#[test]
fn nested_checkpoints_restore_what_each_saw() {
    let mut set = WriteSet::default();
    set.insert(entry(8, 1));
    let outer = set.checkpoint(0);
    set.update(8, 2, usize::MAX);
    set.insert(entry(16, 20));
    let inner = set.checkpoint(0);
    set.update(8, 3, usize::MAX);
    set.update(16, 21, usize::MAX);
    set.insert(entry(24, 30));
    set.roll_back_to(inner);
    assert_eq!(set.get(8).unwrap().value, 2);
    assert_eq!(set.get(16).unwrap().value, 20);
    assert!(set.get(24).is_none());
    set.update(8, 4, usize::MAX);
    set.roll_back_to(outer);
    assert_eq!(set.get(8).unwrap().value, 1);
    assert!(set.get(16).is_none());
    assert_eq!(set.len(), 1);
}

#[test]
fn large_sets_index_and_clear_back_to_small() {
    let mut set = WriteSet::default();
    for at in 0..100_000usize {
        set.insert(entry(8 * (at + 1), at));
    }
    assert_eq!(set.get(8 * 50_001).map(|e| e.value), Some(50_000));
    assert!(set.retains_large_table());
    set.clear();
    // What a later small transaction pays no longer depends on the big one.
    assert!(!set.retains_large_table());
    assert!(!set.entries.indexed);
    set.insert(entry(8, 1));
    assert_eq!(set.get(8).map(|e| e.value), Some(1));
    assert!(set.get(16).is_none());
}

#[test]
fn rolled_back_entries_leave_the_index() {
    let mut set = WriteSet::default();
    let checkpoint = set.checkpoint(0);
    for at in 0..(LINEAR_MAX * 3) {
        set.insert(entry(8 * (at + 1), at));
    }
    set.roll_back_to(checkpoint);
    assert!(set.is_empty());
    for at in 0..(LINEAR_MAX * 3) {
        assert!(set.get(8 * (at + 1)).is_none());
    }
    set.insert(entry(8, 7));
    assert_eq!(set.get(8).map(|e| e.value), Some(7));
}

#[test]
fn lock_set_finds_versions_small_and_large() {
    let mut locks = LockSet::default();
    for orec in 0..(LINEAR_MAX as u64 * 4) {
        locks.push(orec as usize, orec + 100);
        assert_eq!(locks.version_before(orec as usize), Some(orec + 100));
    }
    assert_eq!(locks.version_before(3), Some(103));
    assert_eq!(locks.version_before(1000), None);
    locks.clear();
    assert!(locks.is_empty());
    assert_eq!(locks.version_before(3), None);
}

#[test]
fn kept_checkpoints_still_roll_back_with_their_parent() {
    let mut set = WriteSet::default();
    set.insert(entry(8, 1));
    let outer = set.checkpoint(0);
    let inner = set.checkpoint(0);
    set.update(8, 2, usize::MAX);
    set.keep(inner);
    set.roll_back_to(outer);
    assert_eq!(set.get(8).unwrap().value, 1);
}

#[test]
fn a_huge_attempt_leaves_later_small_ones_as_cheap_as_before() {
    // 200,000 writes the way the engine makes them: inlined while there is room,
    // otherwise inserted and granted room up to the next power of two.
    let mut set = WriteSet::default();
    let mut locks = LockSet::default();
    for at in 0..200_000usize {
        let addr = 8 * (at + 1);
        if !set.write::<PerWord>(addr, at, usize::MAX)
            && !set.write_probing::<PerWord>(addr, at, usize::MAX)
        {
            set.insert(entry(addr, at));
            set.allow((set.len() + 1).next_power_of_two().max(LINEAR_MAX));
        }
        locks.push(at, at as u64);
    }
    assert_eq!(set.len(), 200_000);
    assert_eq!(set.get(8 * 123_457).map(|e| e.value), Some(123_456));
    assert_eq!(locks.version_before(123_456), Some(123_456));
    assert!(set.retains_large_table() && locks.retains_large_table());
    set.clear();
    locks.clear();
    // By construction, what a later small attempt pays no longer depends on the
    // huge one: the memory is given back, the sets are searched linearly again
    // and the inlined path's room is back to at most `LINEAR_MAX`.
    assert!(!set.retains_large_table() && !locks.retains_large_table());
    assert!(!set.entries.indexed && locks.indexed == 0);
    assert!(set.room <= LINEAR_MAX && set.room_hint() == 0);
    set.check_invariants();
    locks.check_invariants();
    set.allow(LINEAR_MAX);
    assert!(set.write::<PerWord>(8, 1, usize::MAX));
    assert_eq!(set.get(8).map(|e| e.value), Some(1));
    assert!(set.get(16).is_none());
}

#[test]
fn clearing_a_small_indexed_set_keeps_its_table_and_empties_it() {
    let mut set = WriteSet::default();
    for round in 0..3 {
        set.allow(KEPT_CAPACITY);
        for at in 0..(LINEAR_MAX * 2) {
            assert!(set.write::<PerWord>(8 * (at + 1) + round * 4096, at, usize::MAX));
        }
        assert!(set.entries.indexed);
        set.check_invariants();
        let slots = set.entries.index.slots.len();
        set.clear();
        // Kept for the next attempt (no allocation), still indexed (no rebuild), and
        // emptied by a new generation; the inlined path's room is back to its first
        // step, and the next first growth grants what this attempt had.
        assert_eq!(set.entries.index.slots.len(), slots);
        assert!(set.entries.indexed && set.is_empty());
        assert!(set.room <= LINEAR_MAX && set.room_hint() == KEPT_CAPACITY);
        set.check_invariants();
    }
}

/// A clear empties the index by moving to its next generation; the same addresses
/// written again (same slots, same positions) are found, and slots left by an older
/// generation are vacant, also when the generation wraps around to 1.
#[test]
fn clearing_moves_the_index_to_a_new_generation_and_survives_the_wrap() {
    let mut set = WriteSet::default();
    let mut locks = LockSet::default();
    for (round, start) in [(0usize, 1u32), (1, u32::MAX - 1), (2, u32::MAX), (3, 0)] {
        if start != 0 {
            set.entries.index.generation = start;
            locks.index.generation = start;
        }
        set.allow(KEPT_CAPACITY);
        // Fewer keys each round: slots of the previous round are left behind.
        let count = LINEAR_MAX * 4 - round * 4;
        for at in 0..count {
            assert!(set.write::<PerWord>(8 * (at + 1), at + round, usize::MAX));
            locks.push(at + 1, (at + round) as u64);
        }
        set.check_invariants();
        locks.check_invariants();
        for at in 0..count {
            assert_eq!(set.get(8 * (at + 1)).map(|e| e.value), Some(at + round));
            assert_eq!(locks.version_before(at + 1), Some((at + round) as u64));
        }
        assert!(set.get(8 * (count + 1)).is_none());
        assert!(locks.version_before(count + 1).is_none());
        let generation = set.entries.index.generation;
        set.clear();
        locks.clear();
        let next = if generation == u32::MAX {
            1
        } else {
            generation + 1
        };
        assert_eq!(set.entries.index.generation, next);
        assert_eq!(locks.index.generation, next);
        set.check_invariants();
        locks.check_invariants();
        assert!(set.get(8).is_none());
        assert!(locks.version_before(1).is_none());
    }
}

/// A step of the write-set model test.
#[derive(Clone, Debug)]
enum Step {
    /// A write as `Core::store` makes it.
    Write {
        addr: usize,
        value: usize,
        mask: usize,
    },
    /// `count` first writes of consecutive or strided words (to grow the index).
    Many {
        first: usize,
        count: usize,
        stride: usize,
    },
    Checkpoint,
    RollBack,
    Keep,
    Clear,
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    let masks = prop_oneof![Just(usize::MAX), Just(0xff), Just(0xff00), any::<usize>()];
    prop_oneof![
        8 => (0..96usize, any::<usize>(), masks).prop_map(|(word, value, mask)| {
            // Words 0..64 at one stride, the rest 4 KiB apart: both share filter
            // bits and home slots.
            let addr = if word < 64 { 8 * (word + 1) } else { 4096 * word };
            Step::Write { addr, value, mask }
        }),
        1 => (0..2000usize, 1..300usize, prop_oneof![Just(1usize), Just(8), Just(512)])
            .prop_map(|(first, count, stride)| Step::Many { first, count, stride }),
        1 => Just(Step::Checkpoint),
        1 => Just(Step::RollBack),
        1 => Just(Step::Keep),
        1 => Just(Step::Clear),
    ]
}

/// Writes as `Core::store` does: the inlined path, then the full one (which grants
/// room up to the next power of two when `grant` is set, as under commit-time
/// locking with a large set limit).
fn store(set: &mut WriteSet, grant: bool, addr: usize, value: usize, mask: usize) {
    if set.write::<PerWord>(addr, value, mask) || set.write_probing::<PerWord>(addr, value, mask) {
        return;
    }
    if !set.update(addr, value, mask) {
        set.insert(WriteEntry::new::<PerWord>(addr, value, mask, None));
        if grant {
            set.allow((set.len() + 1).next_power_of_two().max(LINEAR_MAX));
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// The write set against a sequential model (address -> value and mask), with
    /// a stack of snapshots for the checkpoints.
    #[test]
    fn write_set_matches_a_model(
        grant in proptest::prelude::any::<bool>(),
        steps in proptest::collection::vec(step(), 1..120),
    ) {
        use std::collections::BTreeMap;
        type Model = BTreeMap<usize, (usize, usize)>;
        fn apply(model: &mut Model, addr: usize, value: usize, mask: usize) {
            let entry = model.entry(addr).or_insert((0, 0));
            entry.0 = (entry.0 & !mask) | (value & mask);
            entry.1 |= mask;
        }
        let mut set = WriteSet::default();
        let mut model = Model::new();
        let mut open: Vec<(Checkpoint, Model)> = Vec::new();
        for step in steps {
            match step {
                Step::Write { addr, value, mask } => {
                    store(&mut set, grant, addr, value, mask);
                    apply(&mut model, addr, value, mask);
                }
                Step::Many { first, count, stride } => {
                    for at in first..first + count {
                        let addr = 8 * stride * (at + 1);
                        store(&mut set, grant, addr, at, usize::MAX);
                        apply(&mut model, addr, at, usize::MAX);
                    }
                }
                Step::Checkpoint => {
                    open.push((set.checkpoint(open.len()), model.clone()));
                }
                Step::RollBack => {
                    if let Some((checkpoint, before)) = open.pop() {
                        set.roll_back_to(checkpoint);
                        model = before;
                    }
                }
                Step::Keep => {
                    if let Some((checkpoint, _)) = open.pop() {
                        set.keep(checkpoint);
                    }
                }
                Step::Clear => {
                    set.clear();
                    model.clear();
                    open.clear();
                }
            }
            set.check_invariants();
            proptest::prop_assert_eq!(set.len(), model.len());
            proptest::prop_assert_eq!(set.allocations_at_checkpoint(), open.len().saturating_sub(1));
            let mut seen = BTreeMap::new();
            for entry in set.entries() {
                let (value, mask) = (entry.value & entry.mask, entry.mask);
                proptest::prop_assert!(seen.insert(entry.addr, (value, mask)).is_none());
            }
            proptest::prop_assert_eq!(&seen, &model);
            for (&addr, &(value, mask)) in &model {
                let found = set.get(addr).map(|e| (e.value & e.mask, e.mask));
                proptest::prop_assert_eq!(found, Some((value, mask)));
            }
            for absent in [8 * 97, 4096 * 97, 8 * 8 * 100_000] {
                proptest::prop_assert!(model.contains_key(&absent) || set.get(absent).is_none());
            }
        }
    }

    /// The lock set against a map, across clears.
    #[test]
    fn lock_set_matches_a_model(
        rounds in proptest::collection::vec(proptest::collection::vec(0..5000usize, 0..200), 1..6),
    ) {
        let mut locks = LockSet::default();
        for orecs in rounds {
            let mut model = std::collections::BTreeMap::new();
            for orec in orecs {
                if let std::collections::btree_map::Entry::Vacant(slot) = model.entry(orec) {
                    slot.insert(orec as u64 * 3);
                    locks.push(orec, orec as u64 * 3);
                } else {
                    // A lookup between locks, as a commit's own record makes: the
                    // index catches up with part of the set, later locks follow.
                    proptest::prop_assert_eq!(locks.version_before(orec), Some(orec as u64 * 3));
                    locks.check_invariants();
                }
            }
            locks.check_invariants();
            for orec in 0..5000 {
                proptest::prop_assert_eq!(locks.version_before(orec), model.get(&orec).copied());
            }
            locks.clear();
            locks.check_invariants();
            proptest::prop_assert!(locks.is_empty());
        }
    }
}
