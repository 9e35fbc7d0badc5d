//! Model checks of the engine's own protocols on shuttle's scheduler (the `shuttle`
//! feature swaps the engine's atomics, mutexes, parking and thread-locals for
//! shuttle's). Run with `cargo test -p lutra-stm --features shuttle --test model`.
//!
//! The tables are tiny (4 ownership records, 8 descriptors) so records collide and
//! descriptor slots are reused. Every check runs under a seeded random scheduler and a
//! seeded PCT scheduler (reproducible in CI); a schedule that hangs (all threads parked:
//! a lost wake-up) or spins past the step bound (a deadlock of spinning waiters, or a
//! livelock) fails the test.
//!
//! - commit/validate: transfers between two accounts and an audit that asserts the
//!   total inside the transaction; the audit sees one of the serial states;
//! - read-only audits: the same with the audit begun read-only (no read set), beside
//!   a read-only audit that writes (a wrong hint, run again recorded);
//! - retry: a consumer that `retry`s on an empty queue is always woken by the
//!   producer's commit, also through `or_else` (woken by a location only the first
//!   branch read);
//! - kill race: encounter-time locking with `Timestamp` (must neither deadlock nor
//!   livelock) and `Aggressive` (may livelock by design: only the schedules that end
//!   are checked), two writers taking the same words in opposite orders;
//! - irrevocable vs updater: an irrevocable transaction runs once and no updater
//!   commits while it runs (its reads are repeatable);
//! - solo: a descriptor allowed to run solo (uninstrumented, `solo.rs`) transfers
//!   between two words while another thread creates a descriptor and audits: the
//!   audit never sees a half-done transfer, and no transfer is lost (also with
//!   both beginning and committing on the straight paths of `straight.rs`);
//! - serial solo: the soloist's attempts that begin solo turn serial (and stay
//!   straight: `SoloSerialStraight`) and move an amount with plain writes, as GCC's
//!   uninstrumented path does, while another thread creates a descriptor and
//!   audits: the newcomer waits for the serial attempt, the soloist's later
//!   attempts run instrumented, and no audit sees half a transfer;
//! - solo blocks: the soloist replaces a published node by a new one, freeing the
//!   old one, while a newcomer follows the pointer: the newcomer never reads a
//!   released node (a solo attempt releases its frees at its commit, an
//!   instrumented one through the epochs: `solo_blocks.rs`);
//! - serial: an attempt made serial moves an amount with plain writes while an
//!   auditor, an updater and an irrevocable updater run transactions: none runs
//!   beside it, and none deadlocks with it (also with the auditor and the updater
//!   on the straight paths of `straight.rs`, which withdraw from a serial attempt);
//! - irrevocable fallback: with a set limit of 4 and one abort allowed, audits past
//!   the limit and movers that lose run their next attempt irrevocable; the total
//!   holds, nothing hangs, and an effect after `become_irrevocable` happens once;
//! - in place: movers change a boxed pair in place (`update_in_place`, several
//!   changes per attempt, one inside an `or_else` branch that retries and is rolled
//!   back) while an auditor borrows it (`read_with`): the auditor sees only committed
//!   pairs, and the rolled-back change never shows.

#![cfg(feature = "shuttle")]

use lutra_stm::{Config, DesignKind, Stm, TVar, cm};
use shuttle::scheduler::{PctScheduler, RandomScheduler};
use shuttle::{MaxSteps, Runner, thread};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Schedules explored per scheduler and check.
const ITERATIONS: usize = 600;
/// Steps after which a schedule counts as hung: a correct schedule of these tests
/// takes a few thousand.
const STEP_BOUND: usize = 40_000;

fn tiny(design: DesignKind, manager: &str) -> Stm {
    Stm::new(
        Config::default()
            .with_design(design)
            .with_shared_manager(cm::by_name(manager).expect("a known manager"))
            .with_orec_bits(2)
            .with_max_descriptors(8)
            .with_stats(false),
    )
}

/// Runs `check` under a seeded random scheduler and a seeded PCT scheduler.
fn explore<F>(seed: u64, livelock_is_failure: bool, check: F)
where
    F: Fn() + Clone + Send + Sync + 'static,
{
    let mut config = shuttle::Config::new();
    config.max_steps = if livelock_is_failure {
        MaxSteps::FailAfter(STEP_BOUND)
    } else {
        MaxSteps::ContinueAfter(STEP_BOUND)
    };
    Runner::new(
        RandomScheduler::new_from_seed(seed, ITERATIONS),
        config.clone(),
    )
    .run(check.clone());
    Runner::new(PctScheduler::new_from_seed(seed, 3, ITERATIONS), config).run(check);
}

/// Two accounts of 100 in an array of five words: `[0]` and `[1]` sit on different
/// records, `[0]` and `[4]` on the same one (4 records).
fn accounts() -> Arc<[TVar<i64>; 5]> {
    Arc::new(std::array::from_fn(|at| {
        TVar::new(if at == 0 || at == 4 || at == 1 {
            100
        } else {
            0
        })
    }))
}

/// Two transfers between `[0]` and `[second]` (10 one way, 3 back), each on its own
/// thread.
fn transfers(
    stm: &Stm,
    accounts: &Arc<[TVar<i64>; 5]>,
    second: usize,
) -> Vec<thread::JoinHandle<()>> {
    [(0, second, 10), (second, 0, 3)]
        .into_iter()
        .map(|(from, to, amount)| {
            let (stm, accounts) = (stm.clone(), accounts.clone());
            thread::spawn(move || {
                stm.atomically(|tx| {
                    tx.modify(&accounts[from], |b| b - amount)?;
                    tx.modify(&accounts[to], |b| b + amount)
                })
            })
        })
        .collect()
}

fn transfers_and_audit(design: DesignKind, manager: &'static str, second: usize) {
    let stm = tiny(design, manager);
    let accounts = accounts();
    let movers = transfers(&stm, &accounts, second);
    let auditor = {
        let (stm, accounts) = (stm.clone(), accounts.clone());
        thread::spawn(move || {
            stm.atomically(|tx| {
                let a = tx.read(&accounts[0])?;
                let b = tx.read(&accounts[second])?;
                assert_eq!(a + b, 200, "the audit saw an inconsistent snapshot");
                Ok((a, b))
            })
        })
    };
    movers.into_iter().for_each(|m| m.join().unwrap());
    let seen = auditor.join().unwrap();
    assert!(
        [(100, 100), (90, 110), (103, 97), (93, 107)].contains(&seen),
        "the audit committed a state no serial order produces: {seen:?}"
    );
    let end = stm.atomically(|tx| Ok((tx.read(&accounts[0])?, tx.read(&accounts[second])?)));
    assert_eq!(end, (93, 107));
}

#[test]
fn commit_and_validation_keep_audits_consistent() {
    for (seed, design, manager) in [
        (1, DesignKind::WriteBackCtl, "suicide"),
        (2, DesignKind::WriteBackEtl, "suicide"),
        (3, DesignKind::WriteBackEtl, "timestamp"),
        (4, DesignKind::WriteBackCtl, "priority"),
    ] {
        for second in [1, 4] {
            explore(seed, true, move || {
                transfers_and_audit(design, manager, second)
            });
        }
    }
}

/// As [`transfers_and_audit`], with the audit begun read-only (no read set: a newer
/// version aborts it, and its next attempt keeps a read set), beside a second
/// read-only audit that also writes (a wrong hint: it runs again recorded). Neither
/// sees half a transfer, and the wrong hint's write happens once.
fn read_only_audits_beside_transfers(design: DesignKind, manager: &'static str, second: usize) {
    let stm = tiny(design, manager);
    let accounts = accounts();
    let movers = transfers(&stm, &accounts, second);
    let auditors: Vec<_> = [false, true]
        .into_iter()
        .map(|writes| {
            let (stm, accounts) = (stm.clone(), accounts.clone());
            thread::spawn(move || {
                stm.transaction().read_only().run(|tx| {
                    let a = tx.read(&accounts[0])?;
                    let b = tx.read(&accounts[second])?;
                    assert_eq!(a + b, 200, "a read-only audit saw an inconsistent snapshot");
                    if writes {
                        tx.modify(&accounts[2], |n| n + 1)?;
                    }
                    Ok((a, b))
                })
            })
        })
        .collect();
    movers.into_iter().for_each(|m| m.join().unwrap());
    for auditor in auditors {
        let seen = auditor.join().unwrap();
        assert!(
            [(100, 100), (90, 110), (103, 97), (93, 107)].contains(&seen),
            "a read-only audit committed a state no serial order produces: {seen:?}"
        );
    }
    let end = stm.atomically(|tx| {
        Ok((
            tx.read(&accounts[0])?,
            tx.read(&accounts[second])?,
            tx.read(&accounts[2])?,
        ))
    });
    assert_eq!(end, (93, 107, 1));
}

#[test]
fn read_only_audits_keep_consistent_snapshots() {
    for (seed, design, manager) in [
        (11, DesignKind::WriteBackCtl, "suicide"),
        (12, DesignKind::WriteBackEtl, "timestamp"),
    ] {
        for second in [1, 4] {
            explore(seed, true, move || {
                read_only_audits_beside_transfers(design, manager, second)
            });
        }
    }
}

fn take_one(stm: &Stm, items: &TVar<u32>) -> u32 {
    stm.atomically(|tx| {
        let n = tx.read(items)?;
        if n == 0 {
            return tx.retry();
        }
        tx.write(items, n - 1)?;
        Ok(n)
    })
}

fn retry_wakes_consumers(design: DesignKind) {
    let stm = tiny(design, "suicide");
    let items = Arc::new(TVar::new(0u32));
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let (stm, items) = (stm.clone(), items.clone());
            thread::spawn(move || take_one(&stm, &items))
        })
        .collect();
    let producer = {
        let (stm, items) = (stm.clone(), items.clone());
        thread::spawn(move || {
            for _ in 0..2 {
                stm.atomically(|tx| tx.modify(&items, |n| n + 1));
            }
        })
    };
    producer.join().unwrap();
    let mut taken: Vec<u32> = consumers.into_iter().map(|c| c.join().unwrap()).collect();
    taken.sort_unstable();
    assert!(
        taken == [1, 1] || taken == [1, 2],
        "consumers took {taken:?}"
    );
    assert_eq!(stm.atomically(|tx| tx.read(&items)), 0);
}

#[test]
fn retry_is_always_woken_by_the_producer() {
    for (seed, design) in [
        (11, DesignKind::WriteBackCtl),
        (12, DesignKind::WriteBackEtl),
    ] {
        explore(seed, true, move || retry_wakes_consumers(design));
    }
}

/// The consumer's first branch reads `first`, the second reads `second`; both retry
/// until the producer fills `first`, which only the first branch read.
fn or_else_waits_on_both_branches(design: DesignKind) {
    let stm = tiny(design, "suicide");
    let queues = Arc::new([TVar::new(0u32), TVar::new(0u32), TVar::new(0u32)]);
    let consumer = {
        let (stm, queues) = (stm.clone(), queues.clone());
        thread::spawn(move || {
            stm.atomically(|tx| {
                tx.or_else(
                    |tx| {
                        let n = tx.read(&queues[0])?;
                        if n == 0 {
                            tx.write(&queues[2], 99)?;
                            return tx.retry();
                        }
                        tx.write(&queues[0], n - 1).map(|()| "first")
                    },
                    |tx| {
                        let n = tx.read(&queues[1])?;
                        if n == 0 {
                            return tx.retry();
                        }
                        tx.write(&queues[1], n - 1).map(|()| "second")
                    },
                )
            })
        })
    };
    let producer = {
        let (stm, queues) = (stm.clone(), queues.clone());
        thread::spawn(move || stm.atomically(|tx| tx.write(&queues[0], 1)))
    };
    producer.join().unwrap();
    assert_eq!(consumer.join().unwrap(), "first");
    let end = stm.atomically(|tx| {
        Ok([
            tx.read(&queues[0])?,
            tx.read(&queues[1])?,
            tx.read(&queues[2])?,
        ])
    });
    assert_eq!(end, [0, 0, 0], "a retried branch's write survived");
}

#[test]
fn or_else_is_woken_by_a_location_only_the_first_branch_read() {
    for (seed, design) in [
        (21, DesignKind::WriteBackCtl),
        (22, DesignKind::WriteBackEtl),
    ] {
        explore(seed, true, move || or_else_waits_on_both_branches(design));
    }
}

/// Two writers increment `x` and `y` in opposite orders; a reader asserts `x == y`.
fn opposite_writers(manager: &'static str) {
    let stm = tiny(DesignKind::WriteBackEtl, manager);
    let vars = Arc::new([TVar::new(0i64), TVar::new(0i64)]);
    let writers: Vec<_> = [(0, 1), (1, 0)]
        .into_iter()
        .map(|(first, second)| {
            let (stm, vars) = (stm.clone(), vars.clone());
            thread::spawn(move || {
                stm.atomically(|tx| {
                    tx.modify(&vars[first], |v| v + 1)?;
                    tx.modify(&vars[second], |v| v + 1)
                })
            })
        })
        .collect();
    let reader = {
        let (stm, vars) = (stm.clone(), vars.clone());
        thread::spawn(move || {
            stm.atomically(|tx| {
                let x = tx.read(&vars[0])?;
                let y = tx.read(&vars[1])?;
                assert_eq!(x, y, "a reader saw a half-applied transaction");
                Ok(x)
            })
        })
    };
    writers.into_iter().for_each(|w| w.join().unwrap());
    assert!((0..=2).contains(&reader.join().unwrap()));
    let end = stm.atomically(|tx| Ok((tx.read(&vars[0])?, tx.read(&vars[1])?)));
    assert_eq!(end, (2, 2), "an increment was lost");
}

/// One thread runs `{y += 1}` then `{y += 1; x += 1}` from the same descriptor slot;
/// another runs `{x += 1; y += 1}`. A waiter for `y` must notice when the slot it waits
/// for releases `y` and locks it again for its next transaction, which may be younger
/// and waiting for the waiter in turn.
fn same_slot_locks_again(manager: &'static str) {
    let stm = tiny(DesignKind::WriteBackEtl, manager);
    let vars = Arc::new([TVar::new(0i64), TVar::new(0i64)]);
    let twice = {
        let (stm, vars) = (stm.clone(), vars.clone());
        thread::spawn(move || {
            stm.atomically(|tx| tx.modify(&vars[1], |v| v + 1));
            stm.atomically(|tx| {
                tx.modify(&vars[1], |v| v + 1)?;
                tx.modify(&vars[0], |v| v + 1)
            })
        })
    };
    let once = {
        let (stm, vars) = (stm.clone(), vars.clone());
        thread::spawn(move || {
            stm.atomically(|tx| {
                tx.modify(&vars[0], |v| v + 1)?;
                tx.modify(&vars[1], |v| v + 1)
            })
        })
    };
    twice.join().unwrap();
    once.join().unwrap();
    let end = stm.atomically(|tx| Ok((tx.read(&vars[0])?, tx.read(&vars[1])?)));
    assert_eq!(end, (2, 3), "an increment was lost");
}

#[test]
fn waiters_notice_a_slot_that_locks_again() {
    explore(34, true, || same_slot_locks_again("timestamp"));
    explore(35, true, || same_slot_locks_again("size_matters"));
}

#[test]
fn killing_lock_holders_neither_deadlocks_nor_loses_writes() {
    explore(31, true, || opposite_writers("timestamp"));
    explore(32, true, || opposite_writers("priority"));
    // Aggressive may livelock (two transactions killing each other): schedules that
    // reach the step bound are skipped, the others must be correct.
    explore(33, false, || opposite_writers("aggressive"));
}

/// An irrevocable transaction (started so, or becoming so after a read) against an
/// updater moving money between the two accounts it reads.
fn irrevocable_against_updater(design: DesignKind, from_start: bool) {
    let stm = tiny(design, "suicide");
    let accounts = accounts();
    let irrevocable_runs = Arc::new(AtomicUsize::new(0));
    let updater = {
        let (stm, accounts) = (stm.clone(), accounts.clone());
        thread::spawn(move || {
            stm.atomically(|tx| {
                tx.modify(&accounts[0], |b| b - 10)?;
                tx.modify(&accounts[1], |b| b + 10)
            })
        })
    };
    let runs = irrevocable_runs.clone();
    let body = move |tx: &mut lutra_stm::Transaction<'_>| {
        let a = tx.read(&accounts[0])?;
        if !from_start {
            tx.become_irrevocable()?;
        }
        assert!(tx.is_irrevocable());
        runs.fetch_add(1, Ordering::SeqCst);
        thread::yield_now();
        let b = tx.read(&accounts[1])?;
        assert_eq!(
            a + b,
            200,
            "the irrevocable transaction saw an inconsistent state"
        );
        thread::yield_now();
        assert_eq!(
            tx.read(&accounts[0])?,
            a,
            "an updater committed while an irrevocable transaction ran"
        );
        tx.write(&accounts[2], a)
    };
    let irrevocable = {
        let stm = stm.clone();
        thread::spawn(move || {
            if from_start {
                stm.transaction().irrevocable().run(body)
            } else {
                stm.atomically(body)
            }
        })
    };
    updater.join().unwrap();
    irrevocable.join().unwrap();
    assert_eq!(
        irrevocable_runs.load(Ordering::SeqCst),
        1,
        "an irrevocable attempt ran more than once"
    );
}

#[test]
fn irrevocable_transactions_run_once_and_exclude_updaters() {
    for (seed, design, from_start) in [
        (41, DesignKind::WriteBackCtl, true),
        (42, DesignKind::WriteBackEtl, true),
        (43, DesignKind::WriteBackCtl, false),
        (44, DesignKind::WriteBackEtl, false),
    ] {
        explore(seed, true, move || {
            irrevocable_against_updater(design, from_start)
        });
    }
}

/// The irrevocable fallback at three threads (`fallback.rs`): the set limit is 4 and
/// one conflict abort is enough, so the audit (five words) always overflows and runs
/// its next attempt irrevocable, and a mover that loses once does too. Movers and the
/// audit share the accounts; one audit asks to be irrevocable and counts an effect.
/// No schedule hangs, every audit sees the total, no transfer is lost, and the effect
/// happens once.
fn fallback_beside_transfers(design: DesignKind, manager: &'static str) {
    let stm = Stm::new(
        Config::default()
            .with_design(design)
            .with_shared_manager(cm::by_name(manager).expect("a known manager"))
            .with_orec_bits(2)
            .with_max_descriptors(8)
            .with_stats(false)
            .with_max_set_entries(4)
            .with_irrevocable_after_aborts(1),
    );
    let accounts = accounts();
    let effects = Arc::new(AtomicUsize::new(0));
    let movers: Vec<_> = [(0, 1, 10), (1, 4, 3)]
        .into_iter()
        .map(|(from, to, amount)| {
            let (stm, accounts) = (stm.clone(), accounts.clone());
            thread::spawn(move || {
                stm.atomically(|tx| {
                    tx.modify(&accounts[from], |b| b - amount)?;
                    tx.modify(&accounts[to], |b| b + amount)
                })
            })
        })
        .collect();
    let auditor = {
        let (stm, accounts, effects) = (stm.clone(), accounts.clone(), effects.clone());
        thread::spawn(move || {
            let audit = |tx: &mut lutra_stm::Transaction<'_>| {
                let total = accounts
                    .iter()
                    .map(|account| tx.read(account))
                    .sum::<Result<i64, _>>()?;
                assert_eq!(total, 300, "an audit saw an inconsistent snapshot");
                Ok(())
            };
            stm.atomically(|tx| audit(tx));
            stm.atomically(|tx| {
                tx.become_irrevocable()?;
                effects.fetch_add(1, Ordering::SeqCst);
                audit(tx)
            });
        })
    };
    movers.into_iter().for_each(|m| m.join().unwrap());
    auditor.join().unwrap();
    assert_eq!(
        effects.load(Ordering::SeqCst),
        1,
        "an irrevocable effect ran twice"
    );
    let end = stm.atomically(|tx| {
        Ok((
            tx.read(&accounts[0])?,
            tx.read(&accounts[1])?,
            tx.read(&accounts[4])?,
        ))
    });
    assert_eq!(end, (90, 107, 103));
}

#[test]
fn the_irrevocable_fallback_keeps_the_total_and_never_hangs() {
    for (seed, design, manager) in [
        (51, DesignKind::WriteBackCtl, "backoff"),
        (52, DesignKind::WriteBackEtl, "suicide"),
        (53, DesignKind::WriteBackEtl, "timestamp"),
        (54, DesignKind::WriteBackCtl, "priority"),
        (55, DesignKind::WriteBackEtl, "aggressive"),
    ] {
        explore(seed, true, move || {
            fallback_beside_transfers(design, manager)
        });
    }
}

/// Runs `check` under [`explore`] for every design, off and on the straight paths
/// of `straight.rs`.
fn explore_designs_and_paths(seed: u64, check: fn(DesignKind, bool)) {
    for design in DesignKind::ALL {
        for straight in [false, true] {
            explore(seed, true, move || check(design, straight));
        }
    }
}

/// Begins a transaction with `options` on `tx`: on the straight path
/// (`TxDescriptor::try_begin`) when `straight` and the options are the defaults, and
/// through `begin` when that declines or otherwise.
fn begin_on(tx: &mut lutra_stm::TxDescriptor, options: lutra_stm::TxOptions, straight: bool) {
    if !(straight && options == lutra_stm::TxOptions::default() && tx.try_begin(0)) {
        tx.begin(options);
    }
}

/// Commits `tx`'s attempt: on the straight path (`TxDescriptor::try_commit`) when
/// `straight`, and through `commit` when that declines or otherwise.
fn commit_on(tx: &mut lutra_stm::TxDescriptor, straight: bool) -> Result<(), lutra_stm::Abort> {
    if straight && tx.try_commit() {
        return Ok(());
    }
    tx.commit()
}

/// Runs `body` as a word transaction of `tx` until it commits (`Some` of its value)
/// or ends in an explicit abort, which is not retried (`None`). (On the straight
/// paths of `straight.rs` when `straight`.)
fn until_done<T>(
    tx: &mut lutra_stm::TxDescriptor,
    options: lutra_stm::TxOptions,
    straight: bool,
    mut body: impl FnMut(&mut lutra_stm::TxDescriptor) -> Result<T, lutra_stm::Abort>,
) -> Option<T> {
    loop {
        begin_on(tx, options, straight);
        match body(tx).and_then(|value| commit_on(tx, straight).map(|()| value)) {
            Ok(value) => return Some(value),
            Err(abort) => {
                tx.rollback(abort.reason());
                if abort.reason() == lutra_stm::AbortReason::Explicit {
                    return None;
                }
                // Give way, as `atomically` does: under PCT a loop that never
                // yields starves the transaction it conflicts with.
                thread::yield_now();
            }
        }
    }
}

/// [`until_done`] of a body that never aborts explicitly: its value.
fn until_committed<T>(
    tx: &mut lutra_stm::TxDescriptor,
    options: lutra_stm::TxOptions,
    straight: bool,
    body: impl FnMut(&mut lutra_stm::TxDescriptor) -> Result<T, lutra_stm::Abort>,
) -> T {
    until_done(tx, options, straight, body).expect("no explicit abort")
}

/// Two words of 100 each, to move amounts between with raw word transactions.
fn two_words() -> Arc<[AtomicUsize; 2]> {
    Arc::new([AtomicUsize::new(100), AtomicUsize::new(100)])
}

/// The two words' values.
fn word_values(words: &[AtomicUsize; 2]) -> (usize, usize) {
    (
        words[0].load(Ordering::SeqCst),
        words[1].load(Ordering::SeqCst),
    )
}

/// Spawns a thread that runs `body` with a descriptor of its own (allowed to run
/// solo when `solo`) and the two words' addresses.
fn on_words(
    stm: &Stm,
    words: &Arc<[AtomicUsize; 2]>,
    solo: bool,
    body: impl FnOnce(&mut lutra_stm::TxDescriptor, *mut usize, *mut usize) + Send + 'static,
) -> thread::JoinHandle<()> {
    let (stm, words) = (stm.clone(), words.clone());
    thread::spawn(move || {
        let mut tx = lutra_stm::TxDescriptor::new(&stm).unwrap();
        tx.allow_solo(solo);
        body(&mut tx, words[0].as_ptr(), words[1].as_ptr());
    })
}

/// Two words summing to 200; the soloist moves amounts between them with raw word
/// transactions (as the C ABI does), aborting every other attempt after its first
/// write; a newcomer creates its descriptor mid-run and audits the sum.
fn solo_transfers_and_newcomer_audit(design: DesignKind, straight: bool) {
    use lutra_stm::{AbortReason, TxOptions};
    let stm = tiny(design, "suicide");
    let words = two_words();
    let soloist = on_words(&stm, &words, true, move |tx, a, b| {
        for round in 0..3 {
            // SAFETY: the words live in the `Arc` and are only accessed through
            // transactions of this engine.
            until_done(tx, TxOptions::default(), straight, |tx| unsafe {
                let from = tx.load(a)?;
                tx.store(a, from - 1, usize::MAX)?;
                if round == 1 {
                    // An explicit abort after a write: it must be undone.
                    return Err(tx.doom(AbortReason::Explicit));
                }
                let to = tx.load(b)?;
                tx.store(b, to + 1, usize::MAX)
            });
        }
    });
    let newcomer = on_words(&stm, &words, false, move |tx, a, b| {
        // SAFETY: as above.
        let sum = until_committed(tx, TxOptions::default(), straight, |tx| unsafe {
            Ok(tx.load(a)? + tx.load(b)?)
        });
        assert_eq!(sum, 200, "an audit saw half a transfer");
    });
    soloist.join().unwrap();
    newcomer.join().unwrap();
    assert_eq!(
        word_values(&words),
        (98, 102),
        "a transfer was lost or an abort not undone"
    );
}

#[test]
fn solo_attempts_never_run_beside_a_newcomer() {
    explore_designs_and_paths(11, solo_transfers_and_newcomer_audit);
}

/// Two words summing to 200; the mover's attempts that begin solo turn serial and
/// move an amount with plain writes, as GCC's uninstrumented path does on a thread
/// alone with the engine (a schedule point between the two writes), and its other
/// attempts move it through the engine; a newcomer creates its descriptor mid-run
/// (from then on the mover's attempts are instrumented) and audits the sum.
fn serial_solo_transfers_and_newcomer_audit(design: DesignKind, straight: bool) {
    use lutra_stm::TxOptions;
    let stm = tiny(design, "suicide");
    let words = two_words();
    let mover = on_words(&stm, &words, true, move |tx, a, b| {
        for _ in 0..3 {
            // SAFETY: the words live in the `Arc` and are only accessed through
            // transactions of this engine, or plainly by a serial attempt.
            until_committed(tx, TxOptions::default(), straight, |tx| unsafe {
                if tx.is_solo() {
                    tx.become_serial()?;
                    let (a, b) = (AtomicUsize::from_ptr(a), AtomicUsize::from_ptr(b));
                    a.store(a.load(Ordering::Relaxed) - 1, Ordering::Relaxed);
                    thread::yield_now();
                    b.store(b.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                    return Ok(());
                }
                let from = tx.load(a)?;
                tx.store(a, from - 1, usize::MAX)?;
                let to = tx.load(b)?;
                tx.store(b, to + 1, usize::MAX)
            });
        }
    });
    let newcomer = on_words(&stm, &words, false, move |tx, a, b| {
        // SAFETY: as above.
        let sum = until_committed(tx, TxOptions::default(), straight, |tx| unsafe {
            Ok(tx.load(a)? + tx.load(b)?)
        });
        assert_eq!(sum, 200, "an audit saw half of a serial solo transfer");
    });
    mover.join().unwrap();
    newcomer.join().unwrap();
    assert_eq!(word_values(&words), (97, 103), "a transfer was lost");
}

#[test]
fn serial_solo_attempts_never_run_beside_a_newcomer() {
    explore_designs_and_paths(12, serial_solo_transfers_and_newcomer_audit);
}

/// Reads `addr` as the C ABI's `stm_load` does: through the descriptor's read front,
/// and through `load` when the front declines.
///
/// # Safety
/// As `TxDescriptor::load`.
unsafe fn load_via_front(
    tx: &mut lutra_stm::TxDescriptor,
    addr: *const usize,
) -> Result<usize, lutra_stm::Abort> {
    let front = tx.read_front();
    // SAFETY: the descriptor's own front, unused elsewhere during the call; `addr`
    // by the caller's contract.
    match unsafe { lutra_stm::TxDescriptor::try_load_through_front(front, addr) } {
        Some(value) => Ok(value),
        // SAFETY: the caller's contract.
        None => unsafe { tx.load(addr) },
    }
}

/// Writes `value` to `addr` as the C ABI's `stm_store` does: through the
/// descriptor's read front, and through `store` when the front declines.
///
/// # Safety
/// As `TxDescriptor::store`.
unsafe fn store_via_front(
    tx: &mut lutra_stm::TxDescriptor,
    addr: *mut usize,
    value: usize,
) -> Result<(), lutra_stm::Abort> {
    let front = tx.read_front();
    // SAFETY: as in `load_via_front`.
    if unsafe { lutra_stm::TxDescriptor::try_store_through_front(front, addr, value) } {
        return Ok(());
    }
    // SAFETY: the caller's contract.
    unsafe { tx.store(addr, value, usize::MAX) }
}

/// Two words summing to 200; a mover (allowed to run solo) moves amounts between
/// them, and an auditor that registers mid-run sums them, both reading and writing
/// through the read front: every sum an attempt sees is 200, even in an attempt
/// that aborts.
fn front_reads_beside_transfers(design: DesignKind, straight: bool) {
    use lutra_stm::TxOptions;
    let stm = tiny(design, "suicide");
    let words = two_words();
    let mover = on_words(&stm, &words, true, move |tx, a, b| {
        for _ in 0..3 {
            // SAFETY: the words live in the `Arc` and are only accessed through
            // transactions of this engine.
            until_committed(tx, TxOptions::default(), straight, |tx| unsafe {
                let (from, to) = (load_via_front(tx, a)?, load_via_front(tx, b)?);
                assert_eq!(from + to, 200, "the mover saw half a transfer");
                store_via_front(tx, a, from - 1)?;
                store_via_front(tx, b, to + 1)
            });
        }
    });
    let auditor = on_words(&stm, &words, false, move |tx, a, b| {
        for _ in 0..2 {
            // SAFETY: as above.
            until_committed(tx, TxOptions::default(), straight, |tx| unsafe {
                let sum = load_via_front(tx, a)? + load_via_front(tx, b)?;
                assert_eq!(sum, 200, "an audit saw half a transfer");
                Ok(())
            });
        }
    });
    mover.join().unwrap();
    auditor.join().unwrap();
    assert_eq!(word_values(&words), (97, 103), "a transfer was lost");
}

#[test]
fn reads_through_the_front_stay_consistent() {
    explore_designs_and_paths(17, front_reads_beside_transfers);
}

/// What a node holds once released: a reader that sees it read a freed block.
const POISON: usize = usize::MAX;

/// A node holding `value`, leaked: its release ([`poison`]) only marks it.
fn new_node(value: usize) -> usize {
    Box::leak(Box::new(AtomicUsize::new(value))) as *const AtomicUsize as usize
}

/// The nodes' release function: poisons the node instead of freeing it.
///
/// # Safety
/// `addr` is a node of [`new_node`].
unsafe fn poison(addr: usize, _size: usize) {
    // SAFETY: nodes are leaked, so `addr` stays valid.
    unsafe { &*(addr as *const AtomicUsize) }.store(POISON, Ordering::SeqCst);
}

/// Replaces the node `slot` points to by a new node holding `round`, freeing the old
/// one (`freed_size` bytes of it written unchanged) in the same committed
/// transaction of `tx`; the second round's first attempt aborts after doing so.
fn replace_node(
    tx: &mut lutra_stm::TxDescriptor,
    slot: *mut usize,
    round: usize,
    freed_size: usize,
    straight: bool,
) {
    use lutra_stm::AbortReason;
    // SAFETY: the slot outlives the transaction and the nodes are leaked; both are
    // only accessed through transactions of this engine.
    until_done(tx, lutra_stm::TxOptions::default(), straight, |tx| unsafe {
        let old = tx.load(slot)?;
        let node = new_node(round);
        tx.record_allocation(node, 8, poison);
        tx.store(slot, node, usize::MAX)?;
        tx.free_on_commit(old, freed_size, poison)?;
        if round == 2 {
            return Err(tx.doom(AbortReason::Explicit));
        }
        Ok(())
    });
}

/// Follows the pointer in `slot` to its node in one committed transaction of `tx`,
/// yielding between the two reads, and checks that the node read was not released.
fn follow_pointer(tx: &mut lutra_stm::TxDescriptor, slot: *mut usize, straight: bool) {
    // SAFETY: the slot outlives the transaction and the nodes are leaked; both are
    // only accessed through transactions of this engine.
    let value = until_committed(tx, lutra_stm::TxOptions::default(), straight, |tx| unsafe {
        let node = tx.load(slot)?;
        thread::yield_now();
        tx.load(node as *const usize)
    });
    assert_ne!(value, POISON, "a released node was read");
}

/// The value of the node `slot` points to at the end of a test.
fn last_node_value(slot: &AtomicUsize) -> usize {
    let node = slot.load(Ordering::SeqCst);
    // SAFETY: the last node published, leaked.
    unsafe { &*(node as *const AtomicUsize) }.load(Ordering::SeqCst)
}

/// A shared word points to a node. The soloist (alone in the engine until the
/// newcomer registers) replaces the node four times, allocating the new one and
/// freeing the old one in the same attempt, and aborts the second time after doing
/// so; a newcomer creates its descriptor mid-run and follows the pointer twice: it
/// never reads a released node, and every committed replacement is kept.
fn solo_replaces_node_beside_newcomer(design: DesignKind, straight: bool) {
    use lutra_stm::TxDescriptor;
    let stm = tiny(design, "suicide");
    let slot = Arc::new(AtomicUsize::new(new_node(0)));
    let soloist = {
        let (stm, slot) = (stm.clone(), slot.clone());
        thread::spawn(move || {
            let mut tx = TxDescriptor::new(&stm).unwrap();
            tx.allow_solo(true);
            let slot = slot.as_ptr();
            for round in 1..=4 {
                replace_node(&mut tx, slot, round, 0, straight);
            }
        })
    };
    let newcomer = {
        let (stm, slot) = (stm.clone(), slot.clone());
        thread::spawn(move || {
            let mut tx = TxDescriptor::new(&stm).unwrap();
            let slot = slot.as_ptr();
            for _ in 0..2 {
                follow_pointer(&mut tx, slot, straight);
            }
        })
    };
    soloist.join().unwrap();
    newcomer.join().unwrap();
    assert_eq!(
        last_node_value(&slot),
        4,
        "a replacement was lost or an abort not undone"
    );
}

#[test]
fn solo_frees_are_never_read_after_their_release() {
    explore_designs_and_paths(12, solo_replaces_node_beside_newcomer);
}

/// A shared word points to a node. A replacer (instrumented: a reader's descriptor
/// exists from the start) replaces the node six times, allocating the new one and
/// freeing the old one in the same attempt, and aborts
/// the second time after doing so: off the straight paths its commits are general,
/// on them they are the blocks commit of `blocks.rs`, whose frees the epochs release
/// a few at a time. A reader follows the pointer three times: it never reads a
/// released node, and every committed replacement is kept.
fn instrumented_replaces_node_beside_reader(design: DesignKind, straight: bool) {
    use lutra_stm::TxDescriptor;
    let stm = tiny(design, "suicide");
    let slot = Arc::new(AtomicUsize::new(new_node(0)));
    let mut reader_tx = TxDescriptor::new(&stm).unwrap();
    let replacer = {
        let (stm, slot) = (stm.clone(), slot.clone());
        thread::spawn(move || {
            let mut tx = TxDescriptor::new(&stm).unwrap();
            let slot = slot.as_ptr();
            for round in 1..=6 {
                // Odd rounds write the freed word unchanged, so that a reader of
                // it conflicts; even rounds do not, and a reader of a node
                // released too early would read its poison and commit.
                replace_node(&mut tx, slot, round, (round % 2) * 8, straight);
            }
        })
    };
    let reader = {
        let slot = slot.clone();
        thread::spawn(move || {
            let slot = slot.as_ptr();
            for _ in 0..3 {
                follow_pointer(&mut reader_tx, slot, straight);
            }
        })
    };
    replacer.join().unwrap();
    reader.join().unwrap();
    assert_eq!(
        last_node_value(&slot),
        6,
        "a replacement was lost or an abort not undone"
    );
}

#[test]
fn instrumented_frees_are_never_read_after_their_release() {
    explore_designs_and_paths(13, instrumented_replaces_node_beside_reader);
}

/// Two words summing to 200. A serial attempt moves 1 between them with plain
/// writes (as GCC's uninstrumented code does), yielding between the two; an
/// auditor and an updater of the same words run transactions meanwhile: no audit
/// sees the half-done move, and no update is lost.
fn serial_plain_move_beside_audit_and_update(design: DesignKind, straight: bool) {
    use lutra_stm::{TxDescriptor, TxOptions};
    let stm = tiny(design, "suicide");
    let words = two_words();
    let serial = {
        let (stm, words) = (stm.clone(), words.clone());
        thread::spawn(move || {
            let mut tx = TxDescriptor::new(&stm).unwrap();
            until_committed(&mut tx, TxOptions::default(), false, |tx| {
                tx.become_serial()?;
                assert!(tx.is_serial());
                words[0].fetch_sub(1, Ordering::Relaxed);
                thread::yield_now();
                words[1].fetch_add(1, Ordering::Relaxed);
                Ok(())
            });
        })
    };
    let auditor = {
        let (stm, words) = (stm.clone(), words.clone());
        thread::spawn(move || {
            let mut tx = TxDescriptor::new(&stm).unwrap();
            let (a, b) = (words[0].as_ptr(), words[1].as_ptr());
            for _ in 0..2 {
                // SAFETY: the words live in the `Arc`; besides the serial attempt,
                // only transactions of this engine access them.
                let sum = until_committed(&mut tx, TxOptions::default(), straight, |tx| unsafe {
                    Ok(tx.load(a)? + tx.load(b)?)
                });
                assert_eq!(sum, 200, "an audit saw half of a serial move");
            }
        })
    };
    let updater = {
        let (stm, words) = (stm.clone(), words.clone());
        thread::spawn(move || {
            let mut tx = TxDescriptor::new(&stm).unwrap();
            let (a, b) = (words[0].as_ptr(), words[1].as_ptr());
            // SAFETY: as for the auditor.
            until_committed(&mut tx, TxOptions::default(), straight, |tx| unsafe {
                let (x, y) = (tx.load(a)?, tx.load(b)?);
                tx.store(a, x + 5, usize::MAX)?;
                tx.store(b, y - 5, usize::MAX)
            });
        })
    };
    // Starts irrevocable: it waits for the commit gate, which the serial attempt
    // holds, and must do so unannounced (the serial attempt waits for every
    // announced attempt).
    let irrevocable = {
        let (stm, words) = (stm.clone(), words.clone());
        thread::spawn(move || {
            let mut tx = TxDescriptor::new(&stm).unwrap();
            let (a, b) = (words[0].as_ptr(), words[1].as_ptr());
            let options = TxOptions {
                irrevocable: true,
                ..TxOptions::default()
            };
            // SAFETY: as for the auditor.
            until_committed(&mut tx, options, false, |tx| unsafe {
                let (x, y) = (tx.load(a)?, tx.load(b)?);
                tx.store(a, x + 10, usize::MAX)?;
                tx.store(b, y - 10, usize::MAX)
            });
        })
    };
    for handle in [serial, auditor, updater, irrevocable] {
        handle.join().unwrap();
    }
    let (a, b) = (
        words[0].load(Ordering::SeqCst),
        words[1].load(Ordering::SeqCst),
    );
    assert_eq!((a, b), (114, 86), "a move was lost");
}

#[test]
fn serial_attempts_run_alone() {
    explore_designs_and_paths(13, serial_plain_move_beside_audit_and_update);
}

/// Two movers shift units inside one boxed pair with `update_in_place` (two changes
/// per attempt: the second takes the in-place path), the first also inside an
/// `or_else` branch that then retries (its change must be undone, in place or not);
/// an auditor borrows the pair with `read_with` and checks the total.
fn in_place_moves_and_audit(design: DesignKind) {
    let stm = tiny(design, "suicide");
    let pair = Arc::new(TVar::new(vec![10i64, 0]));
    let movers: Vec<_> = [1i64, 2]
        .into_iter()
        .map(|amount| {
            let (stm, pair) = (stm.clone(), pair.clone());
            thread::spawn(move || {
                stm.atomically(|tx| {
                    tx.update_in_place(&pair, |v| {
                        v[0] -= amount;
                        v[1] += amount;
                    })?;
                    tx.update_in_place(&pair, |v| {
                        v[0] -= amount;
                        v[1] += amount;
                    })?;
                    if amount == 1 {
                        tx.or_else(
                            |tx| {
                                tx.update_in_place(&pair, |v| v[0] -= 100)?;
                                tx.retry()
                            },
                            |_| Ok(()),
                        )?;
                    }
                    Ok(())
                })
            })
        })
        .collect();
    let auditor = {
        let (stm, pair) = (stm.clone(), pair.clone());
        thread::spawn(move || {
            stm.atomically(|tx| {
                tx.read_with(&pair, |v, _| {
                    assert_eq!(v[0] + v[1], 10, "the audit saw a torn pair: {v:?}");
                    Ok(v[1])
                })
            })
        })
    };
    movers.into_iter().for_each(|m| m.join().unwrap());
    let moved = auditor.join().unwrap();
    assert!(
        [0, 2, 4, 6].contains(&moved),
        "the audit saw a pair no serial order produces: {moved}"
    );
    let end = stm.atomically(|tx| tx.read(&pair));
    assert_eq!(
        end,
        vec![4, 6],
        "a change was lost or a rolled-back one kept"
    );
}

#[test]
fn in_place_changes_stay_private_until_commit() {
    for (seed, design) in [
        (41, DesignKind::WriteBackCtl),
        (42, DesignKind::WriteBackEtl),
    ] {
        explore(seed, true, move || in_place_moves_and_audit(design));
    }
}
