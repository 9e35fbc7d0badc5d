//! The elided lock's decisions on scripted abort sequences (fake hardware backend):
//! every rule of seed 000's Fig. 1, counted per site.

mod common;

use common::{counted_engine, wait_for};
use lutra_elide::global::{
    AbortBeyond, AbortClass, Backend, FallbackCause, GilConfig, GlobalLock, LengthPolicy,
    LiveThread, Replay, SiteStats, Step,
};
use lutra_stm::{Stm, TVar};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc;

const SITE: u32 = 5;
const T: Option<AbortClass> = Some(AbortClass::Transient);
const P: Option<AbortClass> = Some(AbortClass::Persistent);
const L: Option<AbortClass> = Some(AbortClass::LockHeld);

fn fake_lock(outcomes: Vec<Option<AbortClass>>) -> GlobalLock {
    GlobalLock::with_backend(
        &Stm::default(),
        GilConfig::default().with_length(LengthPolicy::Fixed(4)),
        Backend::fake(Replay::new(outcomes)),
    )
}

/// Runs one critical section incrementing a counter, with a second (idle) live thread
/// so that the single-thread shortcut is off; returns the site's statistics.
fn one_section(outcomes: Vec<Option<AbortClass>>) -> SiteStats {
    let gil = fake_lock(outcomes);
    let counter = TVar::new(0u64);
    let mut me = gil.register().unwrap();
    let _idle = gil.register().unwrap();
    me.run(SITE, |section| section.modify(&counter, |n| n + 1));
    assert_eq!(me.run(99, |section| section.read(&counter)), 1, "ran once");
    gil.stats().by_site[&SITE]
}

fn check(stats: &SiteStats, aborts: [u64; 3], fallback: Option<FallbackCause>) {
    assert_eq!(stats.transactions, 1, "{stats}");
    assert_eq!(stats.aborts, aborts, "{stats}");
    match fallback {
        Some(cause) => {
            assert_eq!(stats.fallbacks_for(cause), 1, "{stats}");
            assert_eq!(stats.fallbacks(), 1, "{stats}");
            assert_eq!(stats.speculative_commits, 0, "{stats}");
        }
        None => {
            assert_eq!(stats.fallbacks(), 0, "{stats}");
            assert_eq!(stats.speculative_commits, 1, "{stats}");
        }
    }
}

#[test]
fn no_abort_commits_speculatively() {
    check(&one_section(vec![]), [0, 0, 0], None);
}

#[test]
fn two_transient_aborts_are_retried() {
    check(&one_section(vec![T, T]), [2, 0, 0], None);
}

#[test]
fn the_third_transient_abort_takes_the_lock() {
    check(
        &one_section(vec![T, T, T]),
        [3, 0, 0],
        Some(FallbackCause::TransientAborts),
    );
}

#[test]
fn fifteen_lock_conflicts_are_retried() {
    check(&one_section(vec![L; 15]), [0, 0, 15], None);
}

#[test]
fn the_sixteenth_lock_conflict_takes_the_lock() {
    check(
        &one_section(vec![L; 16]),
        [0, 0, 16],
        Some(FallbackCause::LockConflicts),
    );
}

#[test]
fn a_persistent_abort_takes_the_lock_at_once() {
    check(
        &one_section(vec![P]),
        [0, 1, 0],
        Some(FallbackCause::Persistent),
    );
    check(
        &one_section(vec![T, L, P]),
        [1, 1, 1],
        Some(FallbackCause::Persistent),
    );
}

#[test]
fn transient_and_lock_budgets_count_separately() {
    check(
        &one_section(vec![T, L, T, L, L, T]),
        [3, 0, 3],
        Some(FallbackCause::TransientAborts),
    );
    check(&one_section(vec![T, T, L, L, L]), [2, 0, 3], None);
}

#[test]
fn a_single_live_thread_takes_the_lock_without_speculating() {
    let gil = fake_lock(vec![P, P, P]);
    let counter = TVar::new(0u64);
    let mut me = gil.register().unwrap();
    let steps = me.run_steps(SITE, 0u32, |section, done| {
        assert!(section.is_locked());
        section.modify(&counter, |n| n + 1)?;
        *done += 1;
        Ok(if *done == 600 {
            Step::Done(*done)
        } else {
            Step::Continue
        })
    });
    assert_eq!(steps, 600);
    let stats = gil.stats().by_site[&SITE];
    // 600 steps at 255 yield points per single-thread transaction: 3 transactions.
    assert_eq!(stats.transactions, 3, "{stats}");
    assert_eq!(
        stats.fallbacks_for(FallbackCause::SingleThread),
        3,
        "{stats}"
    );
    assert_eq!(stats.total_aborts(), 0, "{stats}");
    assert_eq!(stats.steps, 600, "{stats}");
}

#[test]
fn a_fallback_keeps_the_length() {
    let gil = GlobalLock::with_backend(
        &Stm::default(),
        GilConfig::default().with_length(LengthPolicy::Fixed(4)),
        Backend::fake(AbortBeyond {
            steps: 2,
            class: AbortClass::Persistent,
            only_site: None,
        }),
    );
    let mut me = gil.register().unwrap();
    let _idle = gil.register().unwrap();
    count_steps(&mut me, 12);
    let stats = gil.stats().by_site[&SITE];
    assert_eq!(stats.transactions, 3, "{stats}");
    assert_eq!(stats.fallbacks_for(FallbackCause::Persistent), 3, "{stats}");
    assert_eq!(stats.aborts_of(AbortClass::Persistent), 3, "{stats}");
    assert_eq!(stats.steps, 12, "{stats}");
}

fn count_steps(me: &mut LiveThread, steps: u32) -> u32 {
    me.run_steps(SITE, 0u32, |_, done| {
        *done += 1;
        Ok(if *done == steps {
            Step::Done(*done)
        } else {
            Step::Continue
        })
    })
}

#[test]
fn requiring_the_lock_reruns_under_it_once() {
    let gil = fake_lock(vec![]);
    let mut me = gil.register().unwrap();
    let _idle = gil.register().unwrap();
    let effects = AtomicU32::new(0);
    me.run(SITE, |section| {
        section.require_lock()?;
        effects.fetch_add(1, Ordering::Relaxed);
        Ok(())
    });
    assert_eq!(effects.load(Ordering::Relaxed), 1);
    check(
        &gil.stats().by_site[&SITE],
        [0, 1, 0],
        Some(FallbackCause::Persistent),
    );
}

#[test]
fn aborts_rerun_the_steps_from_the_checkpoint() {
    // Transactions of 4 steps; every other attempt aborts (transient) at its commit.
    let outcomes = (0..64).map(|i| if i % 2 == 0 { T } else { None }).collect();
    let gil = fake_lock(outcomes);
    let counter = TVar::new(0u64);
    let mut me = gil.register().unwrap();
    let _idle = gil.register().unwrap();
    let (steps, sum) = me.run_steps(SITE, (0u64, 0u64), |section, (done, sum)| {
        section.modify(&counter, |n| n + 1)?;
        *done += 1;
        *sum += *done;
        Ok(if *done == 40 {
            Step::Done((*done, *sum))
        } else {
            Step::Continue
        })
    });
    assert_eq!((steps, sum), (40, 820));
    assert_eq!(me.run(99, |section| section.read(&counter)), 40);
    let stats = gil.stats().by_site[&SITE];
    assert_eq!(stats.transactions, 10, "{stats}");
    assert_eq!(stats.aborts_of(AbortClass::Transient), 10, "{stats}");
    assert_eq!(stats.steps, 40, "{stats}");
}

/// Holds the lock (a section that required it) until `release` is set.
fn hold_lock(gil: &GlobalLock, release: &AtomicBool, holding: mpsc::Sender<()>) {
    let mut holder = gil.register().unwrap();
    holder.run(1, |section| {
        section.require_lock()?;
        let _ = holding.send(());
        while !release.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        Ok(())
    });
}

#[test]
fn a_lock_that_stays_busy_is_taken() {
    let (stm, waits) = counted_engine();
    let gil = GlobalLock::with_backend(
        &stm,
        GilConfig::default().with_spin_rounds(10),
        Backend::fake(Replay::default()),
    );
    let release = AtomicBool::new(false);
    let (holding, held) = mpsc::channel();
    std::thread::scope(|scope| {
        let _idle = gil.register().unwrap();
        scope.spawn(|| hold_lock(&gil, &release, holding));
        held.recv().unwrap();
        scope.spawn(|| {
            // Handshake: release only once the section gave up spinning and parked
            // on the lock (or, if it spins without end, once it yields).
            wait_for("the section parked on the lock", || {
                waits.parks() >= 1 || waits.yields() >= 1
            });
            release.store(true, Ordering::Release);
        });
        // The section runs on a thread of its own: the scope's owner is unparked
        // when a scoped thread ends (the holder's, here), which would stand in for
        // the release's wake-up that this test is about.
        scope.spawn(|| {
            let mut me = gil.register().unwrap();
            me.run(SITE, |_| Ok(()));
        });
    });
    check(
        &gil.stats().by_site[&SITE],
        [0, 0, 0],
        Some(FallbackCause::LockBusy),
    );
}

#[test]
fn a_lock_released_while_spinning_lets_the_transaction_speculate() {
    let (stm, waits) = counted_engine();
    let gil = GlobalLock::with_backend(
        &stm,
        GilConfig::default().with_spin_rounds(u32::MAX),
        Backend::fake(Replay::default()),
    );
    let release = AtomicBool::new(false);
    let (holding, held) = mpsc::channel();
    std::thread::scope(|scope| {
        let _idle = gil.register().unwrap();
        scope.spawn(|| hold_lock(&gil, &release, holding));
        held.recv().unwrap();
        scope.spawn(|| {
            // Handshake: release only once the section provably spins on the held
            // lock (its spin loop, past the pause rounds, yields through the parking).
            wait_for("the section spinning on the lock", || {
                waits.yields() >= 1 || waits.parks() >= 1
            });
            release.store(true, Ordering::Release);
        });
        let mut me = gil.register().unwrap();
        me.run(SITE, |_| Ok(()));
    });
    check(&gil.stats().by_site[&SITE], [0, 0, 0], None);
}

#[test]
fn a_panicking_step_releases_the_lock_and_rolls_back() {
    let gil = fake_lock(vec![P]);
    let counter = TVar::new(0u64);
    let mut me = gil.register().unwrap();
    let other = gil.register().unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        me.run(SITE, |section| {
            section.modify(&counter, |n| n + 1)?;
            assert!(
                !section.is_locked(),
                "first attempt speculative, then persistent"
            );
            Ok(())
        })
    }));
    assert!(panicked.is_err());
    assert!(!gil.is_held(), "the lock was released on unwind");
    // Another thread can still run (the gate of the panicked attempt is open again
    // once that thread runs its next section or drops its handle).
    drop(me);
    let shared = &counter;
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let (mut other, counter) = (other, shared);
            other.run(SITE, |section| section.modify(counter, |n| n + 10));
        });
    });
    let mut me = gil.register().unwrap();
    assert_eq!(me.run(99, |section| section.read(&counter)), 10);
}
