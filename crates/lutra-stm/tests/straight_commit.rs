//! The straight commit of a transaction that wrote (`straight.rs`, `TxDescriptor::try_commit`)
//! gives up when something stands in its way, and then leaves nothing behind: every
//! record it locked is free again with the version it had, its status reads active,
//! and the general commit meets the same obstacle and decides.
//!
//! Each test drives the interleaving it needs with several descriptors on one thread
//! (no timing, no chance): the obstacle is in place before the straight commit runs.
//! The random and weak-memory explorations of the same path are in `model.rs` and
//! `loom.rs` (their straight transactions commit through it).

use lutra_stm::{Abort, AbortReason, Config, DesignKind, Stm, TxDescriptor, TxOptions};
use std::sync::atomic::{AtomicUsize, Ordering};

/// An engine without statistics or hooks, so that its attempts are straight.
fn straight_engine() -> Stm {
    Stm::new(
        Config::default()
            .with_design(DesignKind::WriteBackCtl)
            .with_stats(false),
    )
}

/// Three words on three different records.
fn words() -> Box<[AtomicUsize; 3]> {
    Box::new([
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    ])
}

/// `word` read in `desc`'s running attempt.
fn load(desc: &mut TxDescriptor, word: &AtomicUsize) -> Result<usize, Abort> {
    // SAFETY: the words of these tests outlive every transaction, are aligned and are
    // accessed only through the engine while transactions run.
    unsafe { desc.load(word.as_ptr()) }
}

/// `value` written to `word` in `desc`'s running attempt.
fn store(desc: &mut TxDescriptor, word: &AtomicUsize, value: usize) -> Result<(), Abort> {
    // SAFETY: as in `load`.
    unsafe { desc.store(word.as_ptr(), value, usize::MAX) }
}

/// A first transaction reading `word`: the read set grows to its kept capacity,
/// which makes that attempt not straight; the descriptor's next ones are.
fn warm_up(desc: &mut TxDescriptor, word: &AtomicUsize) {
    desc.begin(TxOptions::default());
    load(desc, word).unwrap();
    desc.commit().unwrap();
}

#[test]
fn a_straight_commit_whose_read_changed_gives_up_and_keeps_versions() {
    let stm = straight_engine();
    let [x, y, z] = &*words();
    let mut writer = TxDescriptor::new(&stm).unwrap();
    let mut other = TxDescriptor::new(&stm).unwrap();
    let mut reader = TxDescriptor::new(&stm).unwrap();
    warm_up(&mut writer, y);
    warm_up(&mut reader, x);
    reader.begin(TxOptions::default());
    assert_eq!(load(&mut reader, x).unwrap(), 0);

    writer.begin(TxOptions::default());
    assert_eq!(load(&mut writer, y).unwrap(), 0);
    store(&mut writer, x, 1).unwrap();

    other.begin(TxOptions::default());
    store(&mut other, y, 5).unwrap();
    assert!(other.try_commit(), "nothing stands in the way of this one");
    assert_eq!(y.load(Ordering::Relaxed), 5);

    assert!(
        !writer.try_commit(),
        "the writer read y before it changed: the straight commit must give up"
    );
    assert!(writer.is_active(), "giving up leaves the attempt running");
    assert_eq!(x.load(Ordering::Relaxed), 0, "nothing was written back");
    assert_eq!(
        writer.commit().unwrap_err().reason(),
        AbortReason::Validation,
        "the general commit meets the same obstacle"
    );

    // x's record is free and kept the version the reader saw: the reader's own update
    // commit validates its read of x and commits.
    store(&mut reader, z, 7).unwrap();
    assert!(
        reader.try_commit(),
        "x's record changed version or stayed locked"
    );
    assert_eq!(z.load(Ordering::Relaxed), 7);
}

#[test]
fn a_straight_commit_meeting_the_commit_gate_gives_up_and_frees_its_records() {
    let stm = straight_engine();
    let [x, _, _] = &*words();
    let mut writer = TxDescriptor::new(&stm).unwrap();
    let mut irrevocable = TxDescriptor::new(&stm).unwrap();
    let mut reader = TxDescriptor::new(&stm).unwrap();
    writer.begin(TxOptions::default());
    store(&mut writer, x, 1).unwrap();

    irrevocable.begin(TxOptions::default());
    irrevocable.become_irrevocable().unwrap();

    assert!(
        !writer.try_commit(),
        "an irrevocable attempt holds the commit gate: the straight commit must give up"
    );
    assert!(writer.is_active());
    // The record it locked is free again: another reader gets x at once.
    reader.begin(TxOptions::default());
    assert_eq!(load(&mut reader, x).unwrap(), 0);
    reader.commit().unwrap();
    // The general commit meets the closed gate.
    assert_eq!(
        writer.commit().unwrap_err().reason(),
        AbortReason::Irrevocable
    );

    // The irrevocable attempt writes x without waiting for anyone, and commits.
    store(&mut irrevocable, x, 2).unwrap();
    irrevocable.commit().unwrap();
    assert_eq!(x.load(Ordering::Relaxed), 2);

    // With the gate open, the writer's next transaction commits.
    writer.begin(TxOptions::default());
    store(&mut writer, x, 3).unwrap();
    writer.commit().unwrap();
    assert_eq!(x.load(Ordering::Relaxed), 3);
}

#[test]
fn a_straight_commit_of_two_words_on_one_record_locks_it_once() {
    // Two records: the words two apart share one, already held by the commit itself
    // when it comes to the second.
    let stm = Stm::new(
        Config::default()
            .with_design(DesignKind::WriteBackCtl)
            .with_orec_bits(1)
            .with_stats(false),
    );
    let [x, _, y] = &*words();
    let mut writer = TxDescriptor::new(&stm).unwrap();
    let mut reader = TxDescriptor::new(&stm).unwrap();
    reader.begin(TxOptions::default());
    assert_eq!(load(&mut reader, y).unwrap(), 0);
    reader.commit().unwrap();

    writer.begin(TxOptions::default());
    store(&mut writer, x, 4).unwrap();
    store(&mut writer, y, 6).unwrap();
    assert!(writer.try_commit());
    assert_eq!(
        (x.load(Ordering::Relaxed), y.load(Ordering::Relaxed)),
        (4, 6)
    );

    // The record was released once the commit ended: a reader sees both words.
    reader.begin(TxOptions::default());
    let seen = (load(&mut reader, x).unwrap(), load(&mut reader, y).unwrap());
    assert_eq!(seen, (4, 6));
    reader.commit().unwrap();
}
