//! Cooperative locks in every cell of the paper's Table 2 (seed 003, Section 4): each
//! lock function called from a non-transactional thread and from a transactional one,
//! and what the two modes do to each other.

mod common;

use common::{counted_engine, wait_for};
use lutra_elide::coop::{CoopLock, CoopTx, Mode};
use lutra_stm::{Stm, TVar};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Spins until `condition` holds; fails after 10 s (a hang is a failure).
fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::yield_now();
    }
}

/// Non-transactional thread, `cx_optimistic`: many transactional holders inside at once.
#[test]
fn optimistic_holders_are_inside_together() {
    let (stm, lock) = (Stm::default(), CoopLock::new());
    let cells = [TVar::new(0u32), TVar::new(0u32)];
    let inside = AtomicU32::new(0);
    std::thread::scope(|scope| {
        for cell in &cells {
            let (stm, lock, inside) = (&stm, &lock, &inside);
            scope.spawn(move || {
                let mode = lock.optimistic(stm, |tx| {
                    inside.fetch_add(1, Ordering::SeqCst);
                    eventually("both holders inside", || inside.load(Ordering::SeqCst) >= 2);
                    tx.modify(cell, |n| n + 1)?;
                    Ok(tx.mode())
                });
                assert_eq!(mode, Mode::Optimistic);
            });
        }
    });
    assert_eq!(inside.load(Ordering::SeqCst), 2, "each body ran once");
    assert_eq!(stm.stats().total.total_aborts(), 0);
}

/// Non-transactional thread, `cx_exclusive`: it gets in while a transactional holder
/// is inside, kicks that holder out (it restarts), and the holder re-enters after.
#[test]
fn exclusive_kicks_optimistic_holder_out() {
    let (stm, lock) = (Stm::default(), CoopLock::new());
    let (mine, theirs) = (TVar::new(0u32), TVar::new(0u32));
    let (runs, holder_inside) = (AtomicU32::new(0), AtomicBool::new(false));
    std::thread::scope(|scope| {
        scope.spawn(|| {
            lock.optimistic(&stm, |tx| {
                let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
                if run == 1 {
                    holder_inside.store(true, Ordering::SeqCst);
                    eventually("the exclusive section", || lock.generation() == 1);
                }
                tx.modify(&mine, |n| n + 1)
            });
        });
        eventually("the optimistic holder", || {
            holder_inside.load(Ordering::SeqCst)
        });
        let mode = lock.exclusive(&stm, |tx| {
            assert!(lock.is_held(), "the door is closed while exclusive");
            tx.modify(&theirs, |n| n + 1)?;
            Ok(tx.mode())
        });
        assert_eq!(mode, Mode::Exclusive);
    });
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "kicked out once, then re-entered"
    );
    assert!(!lock.is_held());
    assert_eq!(
        stm.atomically(|tx| Ok((tx.read(&mine)?, tx.read(&theirs)?))),
        (1, 1)
    );
}

/// While an exclusive section runs, an optimistic entrant waits at the door without
/// reading the lock word; the release then does not abort it (the paper's `xtest`).
#[test]
fn optimistic_entrant_waits_outside_and_is_not_aborted_by_release() {
    let ((stm, waits), lock) = (counted_engine(), CoopLock::new());
    let data = TVar::new(0u32);
    let (release, body_ran, attempts) = (
        AtomicBool::new(false),
        AtomicBool::new(false),
        AtomicU32::new(0),
    );
    std::thread::scope(|scope| {
        scope.spawn(|| {
            lock.exclusive(&stm, |tx| {
                eventually("the release signal", || release.load(Ordering::SeqCst));
                tx.modify(&data, |n| n + 10)
            });
        });
        eventually("the exclusive holder", || lock.is_held());
        scope.spawn(|| {
            let seen = lock.optimistic(&stm, |tx| {
                attempts.fetch_add(1, Ordering::SeqCst);
                body_ran.store(true, Ordering::SeqCst);
                tx.read(&data)
            });
            assert_eq!(seen, 10, "entered after the exclusive section committed");
        });
        // Handshake: the entrant provably waits at the door (its wait loop yields
        // through the engine's parking), or has wrongly entered.
        wait_for("the entrant at the door", || {
            waits.yields() >= 1 || body_ran.load(Ordering::SeqCst)
        });
        assert!(
            !body_ran.load(Ordering::SeqCst),
            "entered while held exclusively"
        );
        release.store(true, Ordering::SeqCst);
    });
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        1,
        "the release aborted the waiter"
    );
}

/// A transactional thread waiting for a nested lock held exclusively keeps its
/// transaction: the release does not abort it either.
#[test]
fn nested_waiter_keeps_its_transaction_across_the_release() {
    let ((stm, waits), outer, inner) = (counted_engine(), CoopLock::new(), CoopLock::new());
    let (before, guarded) = (TVar::new(1u32), TVar::new(0u32));
    let (release, attempts) = (AtomicBool::new(false), AtomicU32::new(0));
    std::thread::scope(|scope| {
        scope.spawn(|| {
            inner.exclusive(&stm, |tx| {
                eventually("the release signal", || release.load(Ordering::SeqCst));
                tx.modify(&guarded, |n| n + 1)
            });
        });
        eventually("the exclusive holder", || inner.is_held());
        scope.spawn(|| {
            let total = outer.optimistic(&stm, |tx| {
                attempts.fetch_add(1, Ordering::SeqCst);
                let first = tx.read(&before)?;
                inner.nested(tx, |tx| Ok(first + tx.read(&guarded)?))
            });
            assert_eq!(total, 2);
        });
        // Handshake: the nested entry provably waits at the inner lock's door.
        wait_for("the nested waiter at the door", || waits.yields() >= 1);
        release.store(true, Ordering::SeqCst);
    });
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
}

/// Exclusive sections exclude each other.
#[test]
fn exclusive_sections_never_overlap() {
    let (stm, lock) = (Stm::default(), CoopLock::new());
    let (inside, overlaps) = (AtomicU32::new(0), AtomicU32::new(0));
    let counter = TVar::new(0u32);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..50 {
                    lock.exclusive(&stm, |tx| {
                        tx.io(|| {
                            if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                                overlaps.fetch_add(1, Ordering::SeqCst);
                            }
                            std::thread::yield_now();
                            inside.fetch_sub(1, Ordering::SeqCst);
                        })?;
                        tx.modify(&counter, |n| n + 1)
                    });
                }
            });
        }
    });
    assert_eq!(overlaps.load(Ordering::SeqCst), 0);
    assert_eq!(stm.atomically(|tx| tx.read(&counter)), 200);
    assert_eq!(lock.generation(), 200);
}

/// Transactional thread, `cx_exclusive`: the outer transaction reverts to mutual
/// exclusion — whether a cooperative lock or a plain `atomically` started it.
#[test]
fn exclusive_inside_a_transaction_reverts_the_outer_one() {
    let (stm, outer, inner) = (Stm::default(), CoopLock::new(), CoopLock::new());
    let value = TVar::new(0u32);
    let mut modes = Vec::new();
    outer.optimistic(&stm, |tx| {
        modes.push((tx.mode(), outer.is_held()));
        inner.nested_exclusive(tx, |tx| tx.modify(&value, |n| n + 1))
    });
    assert_eq!(
        modes,
        [(Mode::Optimistic, false), (Mode::Exclusive, true)],
        "restarted once, exclusively, holding the outer lock's door"
    );
    assert!(!outer.is_held(), "the door opened after the commit");
    assert_eq!((outer.generation(), inner.generation()), (1, 1));

    let mut runs = 0;
    stm.atomically(|tx| {
        runs += 1;
        inner.nested_exclusive(tx, |tx| tx.modify(&value, |n| n + 1))
    });
    assert_eq!(
        runs, 2,
        "a plain transaction reverts too, and does not loop"
    );
    assert_eq!(stm.atomically(|tx| tx.read(&value)), 2);
}

/// Transactional thread, `cx_optimistic`: the nested lock flattens into the outer
/// transaction (its writes commit or vanish with the outer ones) and takes its mode.
#[test]
fn optimistic_inside_a_transaction_flattens() {
    let (stm, outer, inner) = (Stm::default(), CoopLock::new(), CoopLock::new());
    let (a, b) = (TVar::new(0u32), TVar::new(0u32));
    let mut runs = 0;
    outer.optimistic(&stm, |tx| {
        runs += 1;
        tx.modify(&a, |n| n + 1)?;
        let mode = inner.nested(tx, |tx| {
            tx.modify(&b, |n| n + 1)?;
            Ok(tx.mode())
        })?;
        assert_eq!(mode, Mode::Optimistic);
        if runs == 1 {
            return tx.abort();
        }
        Ok(())
    });
    assert_eq!(runs, 2);
    assert_eq!(
        stm.atomically(|tx| Ok((tx.read(&a)?, tx.read(&b)?))),
        (1, 1),
        "the aborted attempt's nested writes vanished with the outer ones"
    );
    assert_eq!((outer.generation(), inner.generation()), (0, 0));
}

/// An exclusion need at any depth restarts the outermost section, once, and every
/// lock of the re-run is entered exclusively.
#[test]
fn need_at_depth_restarts_the_outermost() {
    let (stm, locks) = (
        Stm::default(),
        [CoopLock::new(), CoopLock::new(), CoopLock::new()],
    );
    let counter = TVar::new(0u32);
    let (mut runs, mut writes) = (0, 0);
    locks[0].optimistic(&stm, |tx| {
        runs += 1;
        locks[1].nested(tx, |tx| {
            locks[2].nested(tx, |tx| {
                tx.modify(&counter, |n| n + 1)?;
                tx.io(|| writes += 1)
            })
        })
    });
    assert_eq!((runs, writes), (2, 1));
    assert_eq!(stm.atomically(|tx| tx.read(&counter)), 1);
    for lock in &locks {
        assert_eq!(
            lock.generation(),
            1,
            "each lock was entered exclusively once"
        );
        assert!(!lock.is_held());
    }
}
