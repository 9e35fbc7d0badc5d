//! The read-only hint (`TxOptions::read_only`, `TxBuilder::read_only`): a hinted
//! transaction's first attempt keeps no read set, so it aborts where a recorded
//! attempt would extend its snapshot; a write or a `retry` in it runs the transaction
//! again recorded; the attempt after an abort keeps a read set, so a long reader
//! finishes beside writers that commit during each of its attempts. Driven through
//! descriptors, one step at a time (no sleeps); the interleavings are model-checked in
//! `model.rs`.

use lutra_stm::{AbortReason, Config, Stm, TVar, TxDescriptor, TxOptions};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn read_only() -> TxOptions {
    TxOptions {
        read_only: true,
        ..TxOptions::default()
    }
}

/// Commits `value` to `addr` through `writer`, a descriptor of the same engine.
fn commit_write(writer: &mut TxDescriptor, addr: *mut usize, value: usize) {
    writer.begin(TxOptions::default());
    // SAFETY: the caller's word outlives the transaction, accessed only through them.
    unsafe { writer.store(addr, value, usize::MAX).unwrap() };
    writer.commit().unwrap();
}

fn aborts_of(stm: &Stm, reason: AbortReason) -> u64 {
    stm.stats().total.aborts[reason as usize]
}

#[test]
fn a_read_only_attempt_aborts_on_a_newer_version_and_the_next_extends() {
    let stm = Stm::new(Config::default().with_stats(true));
    let mut words = [1usize, 2];
    let (x, y) = (&raw mut words[0], &raw mut words[1]);
    let mut reader = TxDescriptor::new(&stm).unwrap();
    let mut writer = TxDescriptor::new(&stm).unwrap();
    reader.begin(read_only());
    // SAFETY: `words` outlives the transactions, accessed only through them.
    unsafe {
        assert_eq!(reader.load(x), Ok(1));
        commit_write(&mut writer, y, 20);
        // A recorded attempt would validate its read of `x` and extend; this one has
        // nothing to validate.
        let abort = reader.load(y).unwrap_err();
        assert_eq!(abort.reason(), AbortReason::Snapshot);
        reader.rollback(abort.reason());
        // The next attempt keeps a read set: a writer committing during it again
        // no longer stops it.
        reader.restart();
        assert_eq!(reader.load(x), Ok(1));
        commit_write(&mut writer, y, 30);
        assert_eq!(reader.load(y), Ok(30));
    }
    reader.commit().unwrap();
    assert_eq!(aborts_of(&stm, AbortReason::Snapshot), 1);
}

#[test]
fn a_read_only_attempt_that_meets_no_newer_version_commits_at_once() {
    let stm = Stm::new(Config::default().with_stats(true));
    let mut words = [1usize, 2];
    let (x, y) = (&raw mut words[0], &raw mut words[1]);
    let mut reader = TxDescriptor::new(&stm).unwrap();
    let mut writer = TxDescriptor::new(&stm).unwrap();
    commit_write(&mut writer, y, 5);
    reader.begin(read_only());
    // SAFETY: as above.
    unsafe {
        assert_eq!(reader.load(x), Ok(1));
        assert_eq!(reader.load(y), Ok(5));
    }
    // A commit after the reads does not concern a snapshot that is already taken.
    commit_write(&mut writer, x, 7);
    reader.commit().unwrap();
    assert_eq!(stm.stats().total.total_aborts(), 0);
}

#[test]
fn a_write_in_a_read_only_transaction_runs_it_again_recorded() {
    let stm = Stm::new(Config::default().with_stats(true));
    let counter = TVar::new(10u64);
    let attempts = AtomicUsize::new(0);
    let seen = stm.transaction().read_only().run(|tx| {
        attempts.fetch_add(1, Ordering::Relaxed);
        let value = tx.read(&counter)?;
        tx.write(&counter, value + 1)?;
        Ok(value)
    });
    assert_eq!(seen, 10);
    assert_eq!(stm.atomically(|tx| tx.read(&counter)), 11);
    assert_eq!(
        attempts.load(Ordering::Relaxed),
        2,
        "the write re-ran the body once"
    );
    assert_eq!(aborts_of(&stm, AbortReason::NotReadOnly), 1);
}

#[test]
fn a_write_in_a_read_only_attempt_has_no_effect_before_the_rerun() {
    let stm = Stm::default();
    let mut words = [1usize, 2];
    let (x, y) = (&raw mut words[0], &raw mut words[1]);
    let mut tx = TxDescriptor::new(&stm).unwrap();
    let _other = TxDescriptor::new(&stm).unwrap();
    tx.begin(read_only());
    // SAFETY: as above.
    unsafe {
        assert_eq!(tx.load(x), Ok(1));
        let abort = tx.store(y, 9, usize::MAX).unwrap_err();
        assert_eq!(abort.reason(), AbortReason::NotReadOnly);
        tx.rollback(abort.reason());
        assert_eq!(words[1], 2);
        tx.restart();
        tx.store(y, 9, usize::MAX).unwrap();
    }
    tx.commit().unwrap();
    assert_eq!(words, [1, 9]);
}

#[test]
fn a_retry_in_a_read_only_transaction_waits_as_any_retry() {
    let stm = Stm::default();
    let ready = Arc::new(TVar::new(false));
    let setter = {
        let (stm, ready) = (stm.clone(), ready.clone());
        std::thread::spawn(move || stm.atomically(|tx| tx.write(&ready, true)))
    };
    stm.transaction()
        .read_only()
        .run(|tx| if tx.read(&ready)? { Ok(()) } else { tx.retry() });
    setter.join().unwrap();
}

#[test]
fn becoming_irrevocable_runs_a_read_only_transaction_again_recorded() {
    let stm = Stm::default();
    let mut words = [3usize, 4];
    let x = &raw mut words[0];
    let mut tx = TxDescriptor::new(&stm).unwrap();
    let _other = TxDescriptor::new(&stm).unwrap();
    tx.begin(read_only());
    // SAFETY: as above.
    unsafe { assert_eq!(tx.load(x), Ok(3)) };
    let abort = tx.become_irrevocable().unwrap_err();
    assert_eq!(abort.reason(), AbortReason::NotReadOnly);
    tx.rollback(abort.reason());
    tx.restart();
    // SAFETY: as above.
    unsafe { assert_eq!(tx.load(x), Ok(3)) };
    tx.become_irrevocable().unwrap();
    tx.commit().unwrap();
}

/// Many more threads than cores: movers keep the total, read-only audits (some of
/// them mis-hinted: they also write a scratch word) assert it inside the transaction.
#[test]
fn read_only_audits_see_consistent_snapshots_beside_movers() {
    const ACCOUNTS: usize = 32;
    const TOTAL: i64 = 100 * ACCOUNTS as i64;
    let stm = Stm::new(Config::default().with_stats(true));
    let accounts: Arc<Vec<TVar<i64>>> = Arc::new((0..ACCOUNTS).map(|_| TVar::new(100)).collect());
    let scratch = Arc::new(TVar::new(0i64));
    let movers: Vec<_> = (0..6)
        .map(|id| {
            let (stm, accounts) = (stm.clone(), accounts.clone());
            std::thread::spawn(move || {
                for round in 0..20_000 {
                    let from = (id * 7 + round * 3) % ACCOUNTS;
                    let to = (id + round * 5 + 1) % ACCOUNTS;
                    stm.atomically(|tx| {
                        tx.modify(&accounts[from], |b| b - 1)?;
                        tx.modify(&accounts[to], |b| b + 1)
                    });
                }
            })
        })
        .collect();
    let auditors: Vec<_> = (0..6)
        .map(|id| {
            let (stm, accounts, scratch) = (stm.clone(), accounts.clone(), scratch.clone());
            std::thread::spawn(move || {
                for round in 0..2_000 {
                    let total = stm.transaction().read_only().run(|tx| {
                        let mut total = 0;
                        for account in accounts.iter() {
                            total += tx.read(account)?;
                        }
                        assert_eq!(total, TOTAL, "an audit saw an inconsistent snapshot");
                        if id % 3 == 0 && round % 2 == 0 {
                            tx.write(&scratch, total)?;
                        }
                        Ok(total)
                    });
                    assert_eq!(total, TOTAL);
                }
            })
        })
        .collect();
    movers.into_iter().for_each(|m| m.join().unwrap());
    auditors.into_iter().for_each(|a| a.join().unwrap());
    let total = stm.atomically(|tx| accounts.iter().map(|a| tx.read(a)).sum::<Result<i64, _>>());
    assert_eq!(total, TOTAL);
    assert_eq!(stm.atomically(|tx| tx.read(&scratch)), TOTAL);
    // Every mis-hinted audit whose read-only attempt reached its write ran again
    // recorded (one that met a newer version first ran recorded already).
    let rerun = aborts_of(&stm, AbortReason::NotReadOnly);
    assert!((1..=2 * 1_000).contains(&rerun), "{rerun} re-runs");
}
