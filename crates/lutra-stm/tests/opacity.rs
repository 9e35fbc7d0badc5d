//! Opacity: no attempt, not even one that will abort, observes a snapshot that never
//! existed.
//!
//! - Stress, every design × contention manager, record tables of 2, 8 and 2^20
//!   entries, 32 threads on 2 cores: writers keep the sum of 6 variables at 0; checkers
//!   assert the sum inside the transaction (a failed assertion panics the attempt and
//!   fails the test), some read-only, some writing a scratch variable halfway (so they
//!   hold records that guard words they read later). Checker attempts that aborted
//!   must have happened, or the stress proved nothing.
//! - Scripted: a reader whose earlier read is overwritten aborts at its next read
//!   instead of returning the new value; a reader whose snapshot is merely older than
//!   an unrelated commit extends it and goes on; under encounter-time locking, locking
//!   a record whose words changed after the snapshot does not expose them.

mod common;

use common::{all_configs, config, within};
use lutra_stm::{AbortReason, Config, DesignKind, Stm, TVar};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::time::Duration;

const VARS: usize = 6;
const WRITERS: usize = 24;
const CHECKERS: usize = 8;
const ROUNDS: usize = 150;

struct Shared {
    stm: Stm,
    vars: Vec<TVar<i64>>,
    scratch: TVar<i64>,
    checker_attempts: AtomicU64,
    checker_commits: AtomicU64,
}

fn writer(shared: &Shared, seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    for _ in 0..ROUNDS {
        let from = rng.usize(0..VARS);
        let to = (from + rng.usize(1..VARS)) % VARS;
        let amount = rng.i64(1..=9);
        shared.stm.atomically(|tx| {
            tx.modify(&shared.vars[from], |v| v - amount)?;
            tx.modify(&shared.vars[to], |v| v + amount)
        });
    }
}

fn checker(shared: &Shared, seed: u64, writes_halfway: bool) {
    let mut rng = fastrand::Rng::with_seed(seed);
    for _ in 0..ROUNDS {
        let rotation = rng.usize(0..VARS);
        shared.stm.atomically(|tx| {
            shared.checker_attempts.fetch_add(1, Ordering::Relaxed);
            let mut sum = 0;
            for at in 0..VARS {
                if writes_halfway && at == VARS / 2 {
                    // Let writers commit between the first half and the lock.
                    std::thread::yield_now();
                    tx.modify(&shared.scratch, |v| v + 1)?;
                }
                sum += tx.read(&shared.vars[(rotation + at) % VARS])?;
            }
            assert_eq!(sum, 0, "an attempt observed an inconsistent snapshot");
            Ok(())
        });
        shared.checker_commits.fetch_add(1, Ordering::Relaxed);
    }
}

fn stress(config: Config) -> u64 {
    let shared = Arc::new(Shared {
        stm: Stm::new(config),
        vars: (0..VARS).map(|_| TVar::new(0)).collect(),
        scratch: TVar::new(0),
        checker_attempts: AtomicU64::new(0),
        checker_commits: AtomicU64::new(0),
    });
    let start = Arc::new(Barrier::new(WRITERS + CHECKERS));
    let threads: Vec<_> = (0..WRITERS + CHECKERS)
        .map(|id| {
            let (shared, start) = (shared.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                if id < WRITERS {
                    writer(&shared, id as u64);
                } else {
                    checker(&shared, id as u64, id % 2 == 0);
                }
            })
        })
        .collect();
    threads
        .into_iter()
        .for_each(|t| t.join().expect("a thread failed"));
    let total = shared.stm.atomically(|tx| {
        shared
            .vars
            .iter()
            .map(|v| tx.read(v))
            .sum::<Result<i64, _>>()
    });
    assert_eq!(total, 0);
    shared.checker_attempts.load(Ordering::Relaxed) - shared.checker_commits.load(Ordering::Relaxed)
}

#[test]
fn no_attempt_sees_a_broken_invariant() {
    within(Duration::from_secs(100), "opacity stress", || {
        let mut aborted_checks = 0;
        for (design, manager) in all_configs() {
            for bits in [1, 3, 20] {
                aborted_checks += stress(config(design, manager).with_orec_bits(bits));
            }
        }
        assert!(
            aborted_checks > 0,
            "no checker attempt ever aborted: the stress did not test zombies"
        );
    });
}

/// Runs `reader` on a thread; it calls the given function once, in its first attempt,
/// to let `commit` run on the main thread before going on.
fn interleave<T: Send + 'static>(
    reader: impl FnOnce(&dyn Fn()) -> T + Send + 'static,
    commit: impl FnOnce(),
) -> T {
    let (paused_tx, paused_rx) = mpsc::channel();
    let (resume_tx, resume_rx) = mpsc::channel::<()>();
    let reader = std::thread::spawn(move || {
        reader(&|| {
            paused_tx.send(()).unwrap();
            resume_rx.recv().unwrap();
        })
    });
    paused_rx.recv().expect("the reader failed before pausing");
    commit();
    resume_tx.send(()).unwrap();
    reader.join().expect("the reader failed")
}

#[test]
fn a_read_after_a_conflicting_commit_aborts() {
    for design in DesignKind::ALL {
        let stm = Stm::new(Config::default().with_design(design));
        let (x, y) = (Arc::new(TVar::new(5i64)), Arc::new(TVar::new(-5i64)));
        let (stm2, x2, y2) = (stm.clone(), x.clone(), y.clone());
        let first_error = interleave(
            move |pause| {
                let mut first_error = None;
                stm2.atomically(|tx| {
                    let a = tx.read(&x2)?;
                    if tx.aborts_so_far() == 0 {
                        pause();
                        match tx.read(&y2) {
                            Ok(b) => assert_eq!(a + b, 0, "read a value from after the snapshot"),
                            Err(abort) => first_error = Some(abort.reason()),
                        }
                    }
                    let b = tx.read(&y2)?;
                    assert_eq!(a + b, 0);
                    Ok(())
                });
                first_error
            },
            || {
                stm.atomically(|tx| {
                    tx.write(&x, 7)?;
                    tx.write(&y, -7)
                })
            },
        );
        assert_eq!(first_error, Some(AbortReason::Validation), "{design:?}");
    }
}

#[test]
fn an_unrelated_commit_extends_the_snapshot_instead_of_aborting() {
    for design in DesignKind::ALL {
        let stm = Stm::new(Config::default().with_design(design));
        let (x, z) = (Arc::new(TVar::new(1i64)), Arc::new(TVar::new(10i64)));
        let (stm2, x2, z2) = (stm.clone(), x.clone(), z.clone());
        let (aborts, seen) = interleave(
            move |pause| {
                stm2.atomically(|tx| {
                    let a = tx.read(&x2)?;
                    if tx.aborts_so_far() == 0 {
                        pause();
                    }
                    let c = tx.read(&z2)?;
                    tx.write(&x2, a + c)?;
                    Ok((tx.aborts_so_far(), c))
                })
            },
            || stm.atomically(|tx| tx.write(&z, 20)),
        );
        assert_eq!(
            aborts, 0,
            "{design:?}: aborted although its reads stayed valid"
        );
        assert_eq!(seen, 20);
        assert_eq!(stm.atomically(|tx| tx.read(&x)), 21);
    }
}

/// Two records: `vars[0]` and `vars[2]` share one, `vars[1]` has the other. The reader
/// reads `vars[1]`, a commit changes `vars[1]` and `vars[2]` together (keeping
/// `vars[1] == vars[2]`), then the reader writes `vars[0]`, locking the record that
/// guards `vars[2]` (under encounter-time locking), and reads `vars[2]` from memory.
#[test]
fn locking_a_changed_record_does_not_expose_newer_words() {
    for design in DesignKind::ALL {
        let stm = Stm::new(Config::default().with_design(design).with_orec_bits(1));
        let vars = Arc::new([TVar::new(0i64), TVar::new(0i64), TVar::new(0i64)]);
        let (stm2, vars2) = (stm.clone(), vars.clone());
        let attempts = interleave(
            move |pause| {
                stm2.atomically(|tx| {
                    let one = tx.read(&vars2[1])?;
                    if tx.aborts_so_far() == 0 {
                        pause();
                    }
                    tx.write(&vars2[0], 1)?;
                    let two = tx.read(&vars2[2])?;
                    assert_eq!(
                        one, two,
                        "read a word newer than the snapshot through an own lock"
                    );
                    Ok(tx.aborts_so_far())
                })
            },
            || {
                stm.atomically(|tx| {
                    tx.write(&vars[1], 9)?;
                    tx.write(&vars[2], 9)
                })
            },
        );
        assert_eq!(attempts, 1, "{design:?}: the stale attempt was not aborted");
        let end =
            stm.atomically(|tx| Ok([tx.read(&vars[0])?, tx.read(&vars[1])?, tx.read(&vars[2])?]));
        assert_eq!(end, [1, 9, 9]);
    }
}
