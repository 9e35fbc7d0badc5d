//! How attempts end, and misuse of the API.
//!
//! - A panic inside a transaction aborts it, releases its locks (another thread then
//!   writes the same variable at once, for both designs), releases the commit gate of
//!   an irrevocable transaction, and propagates with its own message.
//! - Aborts are sticky: after an `Err`, every further access fails too, and a closure
//!   that ignores the error and returns `Ok` does not commit (after an explicit abort,
//!   after being killed by another transaction, and after an ignored `retry`, which
//!   still waits for a change).
//! - Irrevocable transactions run once, no updater commits while one runs, and `retry`
//!   inside one panics with a clear message.
//! - Nested `atomically` panics with a clear message (also when both are irrevocable);
//!   `ensure_may_block` fails inside a transaction.
//! - The priority manager lets the higher-priority transaction win a scripted conflict
//!   (it kills a lower-priority holder; a lower-priority requester waits for it).

mod common;

use common::{CountingParking, config, engine, panic_message, wait_for, within};
use lutra_stm::{AbortReason, DesignKind, Stm, TVar, ensure_may_block, in_transaction};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

const PROMPTLY: Duration = Duration::from_secs(5);

/// Runs `body`, expecting it to panic; returns the panic message.
fn expect_panic(body: impl FnOnce()) -> String {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(()) => panic!("expected a panic"),
        Err(payload) => panic_message(&*payload),
    }
}

#[test]
fn a_panic_aborts_releases_locks_and_propagates() {
    for design in DesignKind::ALL {
        let stm = engine(design, "timestamp");
        let vars = Arc::new([TVar::new(1i64), TVar::new(2i64)]);
        let message = expect_panic(|| {
            stm.atomically(|tx| {
                tx.write(&vars[0], 10)?;
                tx.write(&vars[1], 20)?;
                if tx.read(&vars[0])? == 10 {
                    panic!("boom in the closure");
                }
                Ok(())
            })
        });
        assert_eq!(message, "boom in the closure", "{design:?}");
        assert!(
            !in_transaction(),
            "the panic left the thread inside a transaction"
        );
        // Another thread writes the same variables at once: no lock was left behind.
        let other = {
            let (stm, vars) = (stm.clone(), vars.clone());
            within(PROMPTLY, "writer after a panic", move || {
                stm.atomically(|tx| {
                    tx.write(&vars[0], 3)?;
                    tx.write(&vars[1], 4)?;
                    Ok(tx.aborts_so_far())
                })
            })
        };
        assert_eq!(other, 0, "{design:?}: the writer met a leftover lock");
        // The panicking thread goes on using the engine.
        let seen = stm.atomically(|tx| Ok((tx.read(&vars[0])?, tx.read(&vars[1])?)));
        assert_eq!(
            seen,
            (3, 4),
            "{design:?}: the panicked attempt's writes leaked"
        );
        assert_eq!(stm.stats().total.aborts_for(AbortReason::Panic), 1);
    }
}

#[test]
fn a_panic_in_an_irrevocable_transaction_opens_the_gate() {
    for design in DesignKind::ALL {
        let stm = engine(design, "suicide");
        let var = Arc::new(TVar::new(0u64));
        let message = expect_panic(|| {
            stm.transaction().irrevocable().run(|tx| {
                tx.write(&var, 1)?;
                panic!("irrevocable boom")
            })
        });
        assert_eq!(message, "irrevocable boom");
        let (stm2, var2) = (stm.clone(), var.clone());
        within(PROMPTLY, "updater after an irrevocable panic", move || {
            stm2.atomically(|tx| tx.modify(&var2, |v| v + 5));
            stm2.transaction()
                .irrevocable()
                .run(|tx| tx.modify(&var2, |v| v + 5));
        });
        assert_eq!(stm.atomically(|tx| tx.read(&var)), 10, "{design:?}");
    }
}

#[test]
fn after_an_explicit_abort_every_access_fails_and_nothing_commits() {
    for design in DesignKind::ALL {
        let stm = engine(design, "backoff");
        let (x, y) = (TVar::new(0i64), TVar::new(0i64));
        let mut attempts = 0;
        stm.atomically(|tx| {
            attempts += 1;
            if tx.aborts_so_far() > 0 {
                return tx.write(&y, -1);
            }
            tx.write(&x, 1)?;
            let abort = tx.abort::<()>().unwrap_err();
            assert_eq!(abort.reason(), AbortReason::Explicit);
            assert_eq!(tx.read(&x).unwrap_err().reason(), AbortReason::Explicit);
            assert_eq!(tx.write(&y, 2).unwrap_err().reason(), AbortReason::Explicit);
            assert_eq!(
                tx.modify(&y, |v| v + 1).unwrap_err().reason(),
                AbortReason::Explicit
            );
            // Ignore the error and claim success: the attempt must still not commit.
            Ok(())
        });
        assert_eq!(attempts, 2);
        let end = stm.atomically(|tx| Ok((tx.read(&x)?, tx.read(&y)?)));
        assert_eq!(end, (0, -1), "{design:?}: a doomed attempt committed");
        assert_eq!(stm.stats().total.aborts_for(AbortReason::Explicit), 1);
    }
}

/// Encounter-time locking and `Aggressive`: B's write kills A, which holds the lock;
/// A ignores the error and returns `Ok`, yet its writes must not commit.
#[test]
fn a_killed_attempt_that_ignores_the_error_does_not_commit() {
    within(Duration::from_secs(30), "killed attempt", || {
        let stm = engine(DesignKind::WriteBackEtl, "aggressive");
        let vars = Arc::new([TVar::new(0i64), TVar::new(0i64), TVar::new(0i64)]);
        let (locked_tx, locked_rx) = mpsc::channel();
        let holder = {
            let (stm, vars) = (stm.clone(), vars.clone());
            std::thread::spawn(move || {
                stm.atomically(|tx| {
                    if tx.aborts_so_far() > 0 {
                        return Ok(tx.aborts_so_far());
                    }
                    tx.write(&vars[0], 100)?;
                    locked_tx.send(()).unwrap();
                    let deadline = Instant::now() + Duration::from_secs(10);
                    let error = loop {
                        match tx.read(&vars[1]) {
                            Err(abort) => break abort,
                            Ok(_) if Instant::now() > deadline => {
                                panic!("the holder was never killed")
                            }
                            Ok(_) => std::thread::yield_now(),
                        }
                    };
                    assert_eq!(error.reason(), AbortReason::Killed);
                    assert!(tx.read(&vars[2]).is_err(), "a killed attempt read on");
                    let _ = tx.write(&vars[2], 7);
                    Ok(0)
                })
            })
        };
        locked_rx.recv().unwrap();
        stm.atomically(|tx| tx.write(&vars[0], 1));
        let holder_aborts = holder.join().unwrap();
        assert!(holder_aborts >= 1, "the holder committed its first attempt");
        let end =
            stm.atomically(|tx| Ok((tx.read(&vars[0])?, tx.read(&vars[1])?, tx.read(&vars[2])?)));
        assert_eq!(end, (1, 0, 0), "the killed attempt's writes committed");
        assert!(stm.stats().total.aborts_for(AbortReason::Killed) >= 1);
    });
}

/// A closure that calls `retry` but returns `Ok` must still wait for a change and must
/// not commit its writes (sticky aborts), rather than commit or misreport a misuse.
#[test]
fn an_ignored_retry_still_waits_and_does_not_commit() {
    for design in DesignKind::ALL {
        within(Duration::from_secs(30), "ignored retry", move || {
            let stm = engine(design, "backoff");
            let vars = Arc::new((TVar::new(false), TVar::new(0i64)));
            let setter = {
                let (stm, vars) = (stm.clone(), vars.clone());
                std::thread::spawn(move || {
                    wait_for(|| stm.stats().total.retry_waits >= 1);
                    stm.atomically(|tx| tx.write(&vars.0, true));
                })
            };
            let seen = stm.atomically(|tx| {
                let ready = tx.read(&vars.0)?;
                tx.write(&vars.1, if ready { 2 } else { 1 })?;
                if !ready {
                    let _ = tx.retry::<()>();
                }
                Ok(ready)
            });
            setter.join().unwrap();
            assert!(seen, "{design:?}: committed without the flag");
            assert_eq!(stm.atomically(|tx| tx.read(&vars.1)), 2);
        });
    }
}

/// The updaters' site in `irrevocable_transactions_run_once_and_exclude_updaters`.
const UPDATER_SITE: u32 = 1;

/// How many updater attempts rolled back at a closed commit gate so far. Call it
/// once an updater committed since the last irrevocable attempt ended
/// ([`an_updater_commits`]): until then every updater may still wait for the last
/// gate to open, and none would meet the next one.
fn updaters_turned_back(stm: &Stm) -> u64 {
    an_updater_commits(stm);
    gate_aborts(stm)
}

/// The updaters' `Irrevocable` aborts counted so far.
fn gate_aborts(stm: &Stm) -> u64 {
    stm.stats()
        .by_site
        .get(&UPDATER_SITE)
        .map_or(0, |site| site.aborts_for(AbortReason::Irrevocable))
}

/// Waits until the clock moves: some updater committed.
fn an_updater_commits(stm: &Stm) {
    let clock = stm.clock();
    wait_for(|| stm.clock() != clock);
}

/// Handshake inside an irrevocable attempt: returns once an updater has reached its
/// commit and rolled back at the closed gate (more than `before` counted, `before`
/// being taken before the gate closed), or once the clock moved past `clock` (an
/// updater committed: the caller's checks then fail).
fn updater_met_the_gate(stm: &Stm, before: u64, clock: u64) {
    wait_for(|| gate_aborts(stm) > before || stm.clock() != clock);
}

#[test]
fn irrevocable_transactions_run_once_and_exclude_updaters() {
    for design in DesignKind::ALL {
        within(Duration::from_secs(60), "irrevocable", move || {
            let stm = engine(design, "timestamp");
            let counter = Arc::new(TVar::new(0u64));
            let stop = Arc::new(AtomicBool::new(false));
            let updaters: Vec<_> = (0..16)
                .map(|_| {
                    let (stm, counter, stop) = (stm.clone(), counter.clone(), stop.clone());
                    std::thread::spawn(move || {
                        let mut commits = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            stm.transaction()
                                .site(UPDATER_SITE)
                                .run(|tx| tx.modify(&counter, |v| v + 1));
                            commits += 1;
                        }
                        commits
                    })
                })
                .collect();
            // Let the updaters get going.
            while stm.atomically(|tx| tx.read(&counter)) < 100 {
                std::thread::yield_now();
            }
            let runs = AtomicUsize::new(0);
            for round in 0..5 {
                let before = runs.load(Ordering::SeqCst);
                let turned_back = updaters_turned_back(&stm);
                let (first, second, clock_moved) = stm.transaction().irrevocable().run(|tx| {
                    runs.fetch_add(1, Ordering::SeqCst);
                    assert!(tx.is_irrevocable());
                    let clock = stm.clock();
                    let first = tx.read(&counter)?;
                    updater_met_the_gate(&stm, turned_back, clock);
                    let second = tx.read(&counter)?;
                    let clock_moved = stm.clock() != clock;
                    tx.write(&counter, second + 1_000_000)?;
                    Ok((first, second, clock_moved))
                });
                assert_eq!(
                    runs.load(Ordering::SeqCst),
                    before + 1,
                    "round {round} re-ran"
                );
                assert_eq!(
                    first, second,
                    "an updater committed during an irrevocable transaction"
                );
                assert!(
                    !clock_moved,
                    "a commit happened during an irrevocable transaction"
                );
            }
            // Becoming irrevocable in the middle: the part after it runs once.
            let after = AtomicUsize::new(0);
            let turned_back = updaters_turned_back(&stm);
            stm.atomically(|tx| {
                let first = tx.read(&counter)?;
                tx.become_irrevocable()?;
                after.fetch_add(1, Ordering::SeqCst);
                updater_met_the_gate(&stm, turned_back, stm.clock());
                assert_eq!(
                    tx.read(&counter)?,
                    first,
                    "an updater committed after become_irrevocable"
                );
                tx.write(&counter, first + 1_000_000)
            });
            assert_eq!(after.load(Ordering::SeqCst), 1);
            stop.store(true, Ordering::Relaxed);
            let commits: u64 = updaters.into_iter().map(|u| u.join().unwrap()).sum();
            assert_eq!(
                stm.atomically(|tx| tx.read(&counter)),
                commits + 6 * 1_000_000
            );
            // The six irrevocable transactions above run at site 0. An updater that
            // lost 32 times in a row may also have finished irrevocable, by the
            // fallback (`Config::irrevocable_after_aborts`): that counts at its own site.
            let stats = stm.stats();
            let ours = stats.by_site.get(&0).copied().unwrap_or_default();
            assert_eq!(
                ours.irrevocable_commits, 6,
                "{design:?}: {ours} (all sites: {})",
                stats.total
            );
        });
    }
}

#[test]
fn retry_inside_an_irrevocable_transaction_panics_clearly() {
    for design in DesignKind::ALL {
        let stm = engine(design, "backoff");
        let flag = TVar::new(false);
        let runs = AtomicUsize::new(0);
        let message = expect_panic(|| {
            stm.transaction().irrevocable().run(|tx| {
                runs.fetch_add(1, Ordering::SeqCst);
                if !tx.read(&flag)? {
                    return tx.retry();
                }
                Ok(())
            })
        });
        assert!(
            message.contains("retry") && message.contains("irrevocable"),
            "unclear message: {message}"
        );
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        // The gate was released: updaters commit.
        within(PROMPTLY, "updater after a misused retry", {
            let stm = stm.clone();
            move || {
                let var = TVar::new(1u8);
                stm.atomically(|tx| tx.write(&var, 2));
            }
        });
    }
}

#[test]
fn retry_without_reads_panics_clearly() {
    let stm = Stm::default();
    let message = expect_panic(|| stm.atomically(|tx| tx.retry::<()>()));
    assert!(
        message.contains("read nothing"),
        "unclear message: {message}"
    );
}

#[test]
fn nested_atomically_panics_clearly() {
    for irrevocable in [false, true] {
        let message = within(Duration::from_secs(10), "nested atomically", move || {
            let stm = Stm::default();
            let var = TVar::new(0u32);
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                let run = |body: &mut dyn FnMut(
                    &mut lutra_stm::Transaction<'_>,
                )
                    -> Result<(), lutra_stm::Abort>| {
                    if irrevocable {
                        stm.transaction().irrevocable().run(body)
                    } else {
                        stm.atomically(body)
                    }
                };
                run(&mut |tx| {
                    tx.write(&var, 1)?;
                    run(&mut |tx| tx.write(&var, 2));
                    Ok(())
                })
            }));
            let message = panic_message(&*outcome.expect_err("nested atomically returned"));
            assert!(!in_transaction());
            // Nothing committed, and the engine still works on this thread.
            assert_eq!(stm.atomically(|tx| tx.read(&var)), 0);
            message
        });
        assert!(
            message.contains("nested atomically"),
            "unclear message: {message}"
        );
    }
}

#[test]
fn ensure_may_block_fails_only_inside_transactions() {
    assert!(ensure_may_block().is_ok());
    let stm = Stm::default();
    let var = TVar::new(0u8);
    let inside = stm.atomically(|tx| {
        tx.read(&var)?;
        Ok(ensure_may_block())
    });
    let error = inside.expect_err("blocking was allowed inside a transaction");
    assert!(
        error.to_string().contains("retry"),
        "unhelpful message: {error}"
    );
    assert!(
        ensure_may_block().is_ok(),
        "the flag outlived the transaction"
    );
}

/// Scripted conflicts under encounter-time locking and the priority manager.
#[test]
fn the_priority_manager_lets_the_higher_priority_transaction_win() {
    within(Duration::from_secs(30), "priority", || {
        // 1. The low-priority transaction holds the lock: the high one kills it.
        let stm = engine(DesignKind::WriteBackEtl, "priority");
        let log = Arc::new(TVar::new(Vec::<&'static str>::new()));
        let other = Arc::new(TVar::new(0u8));
        let (locked_tx, locked_rx) = mpsc::channel();
        let low = {
            let (stm, log, other) = (stm.clone(), log.clone(), other.clone());
            std::thread::spawn(move || {
                stm.transaction().priority(1).run(|tx| {
                    tx.modify(&log, |mut l| {
                        l.push("low");
                        l
                    })?;
                    if tx.aborts_so_far() == 0 {
                        locked_tx.send(()).unwrap();
                        // Hold the lock until someone kills this attempt.
                        let deadline = Instant::now() + Duration::from_secs(10);
                        while tx.read(&other).is_ok() {
                            assert!(Instant::now() < deadline, "the holder was never killed");
                            std::thread::yield_now();
                        }
                        return tx.read(&other).map(|_| 0);
                    }
                    Ok(tx.aborts_so_far())
                })
            })
        };
        locked_rx.recv().unwrap();
        let high_aborts = stm.transaction().priority(9).run(|tx| {
            tx.modify(&log, |mut l| {
                l.push("high");
                l
            })?;
            Ok(tx.aborts_so_far())
        });
        assert!(
            low.join().unwrap() >= 1,
            "the low-priority holder was not aborted"
        );
        assert_eq!(high_aborts, 0, "the high-priority transaction gave way");
        assert!(stm.stats().total.aborts_for(AbortReason::Killed) >= 1);
        // The killed transaction restarts only once its killer's attempt has ended.
        assert_eq!(stm.atomically(|tx| tx.read(&log)), ["high", "low"]);

        // 2. The high-priority transaction holds the lock: the low one waits for it.
        let parking = Arc::new(CountingParking::default());
        let stm =
            Stm::new(config(DesignKind::WriteBackEtl, "priority").with_parking(parking.clone()));
        let log = Arc::new(TVar::new(Vec::<&'static str>::new()));
        let start = Arc::new(Barrier::new(2));
        let high = {
            let (stm, log, start, parking) =
                (stm.clone(), log.clone(), start.clone(), parking.clone());
            std::thread::spawn(move || {
                stm.transaction().priority(9).run(|tx| {
                    tx.modify(&log, |mut l| {
                        l.push("high");
                        l
                    })?;
                    if tx.aborts_so_far() == 0 {
                        start.wait();
                        // Keep the lock until the low-priority transaction provably
                        // waits on it: its wait loop yields through the parking.
                        wait_for(|| parking.yields() >= 1);
                    }
                    tx.read(&log)?;
                    Ok(tx.aborts_so_far())
                })
            })
        };
        start.wait();
        let low_aborts = stm.transaction().priority(1).run(|tx| {
            tx.modify(&log, |mut l| {
                l.push("low");
                l
            })?;
            Ok(tx.aborts_so_far())
        });
        assert_eq!(
            high.join().unwrap(),
            0,
            "the high-priority holder was aborted"
        );
        assert_eq!(
            low_aborts, 0,
            "the low-priority requester aborted instead of waiting"
        );
        assert_eq!(stm.atomically(|tx| tx.read(&log)), ["high", "low"]);
    });
}
