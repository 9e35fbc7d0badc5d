//! Statistics: exact counts for scripted outcomes, per site and by abort reason
//! (explicit, panic, capacity, misuse, retry waits, irrevocable commits, most retries);
//! under 16 contending threads, per-site and per-descriptor counters add up to the
//! totals, every attempt ends counted once (starts = commits + aborts + retry waits),
//! and commits equal the transactions run; with statistics off everything stays zero.

mod common;

use common::{CountingParking, panic_message, wait_for, within};
use lutra_stm::{AbortReason, Config, Counters, DesignKind, Stats, Stm, TVar};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

/// The counters added up.
fn sum(counters: impl Iterator<Item = Counters>) -> Counters {
    let mut total = Counters::default();
    for c in counters {
        total.merge(&c);
    }
    total
}

fn assert_counts_equal(what: &str, left: &Counters, right: &Counters) {
    assert_eq!(left.starts, right.starts, "{what}: starts");
    assert_eq!(left.commits, right.commits, "{what}: commits");
    assert_eq!(left.aborts, right.aborts, "{what}: aborts");
    assert_eq!(left.retry_waits, right.retry_waits, "{what}: retry waits");
    assert_eq!(
        left.irrevocable_commits, right.irrevocable_commits,
        "{what}: irrevocable commits"
    );
    assert_eq!(left.max_retries, right.max_retries, "{what}: max retries");
}

fn assert_consistent(stats: &Stats) {
    let by_site = sum(stats.by_site.values().copied());
    assert_counts_equal("sites vs total", &by_site, &stats.total);
    let by_descriptor = sum(stats.by_descriptor.iter().map(|(_, c)| *c));
    assert_counts_equal("descriptors vs total", &by_descriptor, &stats.total);
    let t = &stats.total;
    assert_eq!(
        t.starts,
        t.commits + t.total_aborts() + t.retry_waits,
        "an attempt ended uncounted or twice: {t}"
    );
}

/// Runs the scripted transactions of `scripted_outcomes_are_counted_exactly` on its own
/// thread (with its own descriptor).
fn script(stm: &Stm) {
    let var = TVar::new(0u64);
    let many: Vec<TVar<u64>> = (0..40).map(TVar::new).collect();
    // Site 1: three plain commits.
    for _ in 0..3 {
        stm.transaction()
            .site(1)
            .run(|tx| tx.modify(&var, |v| v + 1));
    }
    // Site 2: two explicit aborts, then a commit.
    stm.transaction().site(2).run(|tx| {
        tx.modify(&var, |v| v + 1)?;
        if tx.aborts_so_far() < 2 {
            tx.abort()
        } else {
            Ok(())
        }
    });
    // Site 3: a panic.
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        stm.transaction().site(3).run(|tx| -> Result<(), _> {
            tx.write(&var, 99)?;
            panic!("counted")
        })
    }));
    assert_eq!(panic_message(&*panicked.unwrap_err()), "counted");
    // Site 4: an irrevocable commit, and `retry` misused in an irrevocable transaction.
    stm.transaction()
        .site(4)
        .irrevocable()
        .run(|tx| tx.modify(&var, |v| v + 1));
    let misused = catch_unwind(AssertUnwindSafe(|| {
        stm.transaction().site(4).irrevocable().run(|tx| {
            tx.read(&var)?;
            tx.retry::<()>()
        })
    }));
    assert!(misused.is_err());
    // Site 5: a capacity abort (the set limit is 8), then a small (irrevocable) attempt.
    stm.transaction().site(5).run(|tx| {
        let reads = if tx.aborts_so_far() == 0 {
            many.len()
        } else {
            2
        };
        many[..reads]
            .iter()
            .map(|v| tx.read(v))
            .sum::<Result<u64, _>>()
    });
}

#[test]
fn scripted_outcomes_are_counted_exactly() {
    for design in DesignKind::ALL {
        let stm = Stm::new(
            Config::default()
                .with_design(design)
                .with_max_set_entries(8),
        );
        let flag = Arc::new(TVar::new(false));
        // Site 6: one retry wait, woken by a commit of site 7.
        let waiter = {
            let (stm, flag) = (stm.clone(), flag.clone());
            std::thread::spawn(move || {
                stm.transaction()
                    .site(6)
                    .run(|tx| if tx.read(&flag)? { Ok(()) } else { tx.retry() })
            })
        };
        wait_for(|| stm.stats().total.retry_waits >= 1);
        stm.transaction().site(7).run(|tx| tx.write(&flag, true));
        waiter.join().unwrap();
        let scripted = {
            let stm = stm.clone();
            std::thread::spawn(move || script(&stm))
        };
        scripted.join().unwrap();

        let stats = stm.stats();
        assert_consistent(&stats);
        let site = |id: u32| stats.by_site.get(&id).copied().unwrap_or_default();
        let explicit = AbortReason::Explicit as usize;
        let (s1, s2, s3, s4, s5, s6, s7) = (
            site(1),
            site(2),
            site(3),
            site(4),
            site(5),
            site(6),
            site(7),
        );
        assert_eq!(
            (s1.starts, s1.commits, s1.total_aborts()),
            (3, 3, 0),
            "{design:?} site 1"
        );
        assert_eq!(
            (s2.starts, s2.commits, s2.aborts[explicit], s2.max_retries),
            (3, 1, 2, 2),
            "site 2"
        );
        assert_eq!(
            (s3.starts, s3.commits, s3.aborts_for(AbortReason::Panic)),
            (1, 0, 1),
            "site 3"
        );
        assert_eq!(
            (
                s4.starts,
                s4.commits,
                s4.irrevocable_commits,
                s4.aborts_for(AbortReason::Misuse)
            ),
            (2, 1, 1, 1),
            "site 4"
        );
        // The attempt after a capacity abort runs irrevocable (the fallback).
        assert_eq!(
            (
                s5.starts,
                s5.commits,
                s5.aborts_for(AbortReason::Capacity),
                s5.irrevocable_commits
            ),
            (2, 1, 1, 1),
            "site 5"
        );
        assert_eq!(
            (s6.starts, s6.commits, s6.retry_waits, s6.total_aborts()),
            (2, 1, 1, 0),
            "site 6"
        );
        assert_eq!((s7.starts, s7.commits), (1, 1), "site 7");
        assert!(
            stats.by_site.keys().all(|site| (1..=7).contains(site)),
            "{:?}",
            stats.by_site.keys()
        );
        assert_eq!(stats.total.irrevocable_commits, 2);
        assert!(
            stats.total.wasted > Duration::ZERO,
            "aborted attempts took no time"
        );
    }
}

#[test]
fn counters_add_up_under_contention() {
    within(Duration::from_secs(60), "stats under contention", || {
        for design in DesignKind::ALL {
            for manager in ["suicide", "timestamp"] {
                let stm = Stm::new(
                    Config::default()
                        .with_design(design)
                        .with_shared_manager(lutra_stm::cm::by_name(manager).unwrap()),
                );
                let vars: Arc<Vec<TVar<i64>>> = Arc::new((0..4).map(TVar::new).collect());
                const THREADS: u64 = 16;
                const ROUNDS: u64 = 100;
                let threads: Vec<_> = (0..THREADS)
                    .map(|id| {
                        let (stm, vars) = (stm.clone(), vars.clone());
                        std::thread::spawn(move || {
                            for round in 0..ROUNDS {
                                let site = (id % 3) as u32;
                                let mut aborted_once = false;
                                stm.transaction().site(site).run(|tx| {
                                    let a = (id + round) as usize % 4;
                                    tx.modify(&vars[a], |v| v + 1)?;
                                    tx.modify(&vars[(a + 1) % 4], |v| v - 1)?;
                                    if round % 10 == 0 && !aborted_once {
                                        aborted_once = true;
                                        return tx.abort();
                                    }
                                    Ok(())
                                });
                            }
                        })
                    })
                    .collect();
                threads.into_iter().for_each(|t| t.join().unwrap());
                let stats = stm.stats();
                assert_consistent(&stats);
                assert_eq!(
                    stats.total.commits,
                    THREADS * ROUNDS,
                    "{design:?}/{manager}"
                );
                assert_eq!(
                    stats.total.aborts_for(AbortReason::Explicit),
                    THREADS * ROUNDS / 10
                );
                for site in 0..3u32 {
                    let threads_on_site =
                        (0..THREADS).filter(|id| (id % 3) as u32 == site).count() as u64;
                    assert_eq!(
                        stats.by_site[&site].commits,
                        threads_on_site * ROUNDS,
                        "site {site}"
                    );
                }
            }
        }
    });
}

#[test]
fn statistics_off_counts_nothing() {
    within(Duration::from_secs(30), "statistics off", || {
        let parking = Arc::new(CountingParking::default());
        let stm = Stm::new(
            Config::default()
                .with_stats(false)
                .with_parking(parking.clone()),
        );
        let flag = Arc::new(TVar::new(false));
        let waiter = {
            let (stm, flag) = (stm.clone(), flag.clone());
            std::thread::spawn(move || {
                stm.transaction()
                    .site(3)
                    .run(|tx| if tx.read(&flag)? { Ok(()) } else { tx.retry() })
            })
        };
        // Handshake: the waiter is parked in `retry` (its wait is one of the outcomes
        // that must go uncounted) before the flag is set.
        wait_for(|| parking.parks() >= 1);
        stm.transaction().site(1).run(|tx| {
            tx.write(&flag, true)?;
            if tx.aborts_so_far() == 0 {
                tx.abort()
            } else {
                Ok(())
            }
        });
        stm.transaction()
            .site(2)
            .irrevocable()
            .run(|tx| tx.modify(&flag, |f| f));
        waiter.join().unwrap();
        let stats = stm.stats();
        assert_eq!(stats.total, Counters::default());
        assert!(stats.by_site.is_empty(), "{:?}", stats.by_site);
        assert!(stats.by_descriptor.is_empty(), "{:?}", stats.by_descriptor);
    });
}
