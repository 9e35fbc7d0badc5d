//! The scheduling policies' decisions on scripted conflict patterns (synthetic
//! `TxEvent`s fed to the hooks), then one end-to-end run per policy on a 2-worker
//! runtime, compared by counts (aborts, switches), never by time.
//!
//! - Names: every policy parses from its name; an unknown name is an error that lists
//!   the names.
//! - CILUTS: CI crosses 0.5 on the third contention abort in a row and the start
//!   switches away, once; one commit brings it back; other ends leave CI alone; CI is
//!   per task (thread).
//! - ATS: a high-CI start holds the one queue; a second one parks until the first
//!   attempt ends, however it ends; low-CI and irrevocable starts pass by.
//! - CTLUTS: a start switches only when the pair's estimated probability exceeds 0.5
//!   and the other id runs on a worker; the table is per ordered pair.
//! - Restart-profile: restarts lower the priority (fed to the engine), wasted time and
//!   restart spikes make a task wasting; on one worker a wasting task gives its turn to
//!   a runnable task that is not wasting and, inside a transaction, not to a
//!   lower-priority one.
//! - End to end: two ids that always conflict on one `TVar` plus independent ones;
//!   CILUTS and CTLUTS switch and abort less than round-robin; every policy completes.
//!
//! Every test on a runtime runs in both synchronisation modes (locks, transactions).

use lutra_sched::policy::{Ats, Ciluts, Ctluts, Policy, RestartProfile};
use lutra_sched::sync_mode::SyncMode;
use lutra_sched::{Barrier, Runtime, current_task};
use lutra_stm::{AbortReason, Config, Decision, DesignKind, Stm, TVar, TxEvent, TxHooks, cm};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;
use common::within;

const CONFLICT: Option<AbortReason> = Some(AbortReason::Validation);

fn event(site: u32, slot: usize, aborts: u32) -> TxEvent {
    TxEvent {
        site,
        slot,
        aborts,
        ..TxEvent::default()
    }
}

/// The end of an attempt of `site` in `slot`, with `reason` (`None`: committed).
fn end(hooks: &dyn TxHooks, site: u32, slot: usize, reason: Option<AbortReason>) {
    hooks.on_attempt_end(&TxEvent {
        reason,
        ..event(site, slot, 1)
    });
}

/// Polls `condition` until it holds; fails after 10 s (a hang is a failure).
fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < deadline, "{what}: not after 10 s");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-3
}

#[test]
fn every_policy_is_selectable_by_name() {
    for policy in Policy::ALL {
        assert_eq!(policy.name().parse::<Policy>(), Ok(policy));
        assert_eq!(
            Policy::from_name(&policy.name().to_uppercase()),
            Some(policy)
        );
    }
    assert_eq!(
        Policy::from_name("restart_profile"),
        Some(Policy::RestartProfile)
    );
    let error = "fifo".parse::<Policy>().unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("'fifo'") && message.contains("ctluts"),
        "{message}"
    );
}

#[test]
fn ciluts_switches_once_above_the_threshold_and_recovers_after_a_commit() {
    let ciluts = Ciluts::new();
    let start = |aborts| ciluts.on_start(&event(1, 0, aborts));
    assert_eq!(start(0), Decision::Proceed);
    end(&ciluts, 1, 0, CONFLICT);
    assert!(close(ciluts.intensity(), 0.25));
    assert_eq!(start(1), Decision::Proceed);
    end(&ciluts, 1, 0, CONFLICT);
    assert!(close(ciluts.intensity(), 0.4375));
    assert_eq!(start(2), Decision::Proceed);
    end(&ciluts, 1, 0, CONFLICT);
    assert!(close(ciluts.intensity(), 0.578));
    assert_eq!(start(3), Decision::SwitchAway, "CI 0.578 > 0.5");
    assert_eq!(start(3), Decision::Proceed, "a start switches at most once");

    // Ends that are not contention leave CI as it is.
    for reason in [
        AbortReason::Retry,
        AbortReason::Explicit,
        AbortReason::Panic,
    ] {
        end(&ciluts, 1, 0, Some(reason));
    }
    assert!(close(ciluts.intensity(), 0.578));

    // CI is per task (here, per thread): another one starts from 0.
    let other = std::thread::scope(|scope| {
        scope
            .spawn(|| (ciluts.intensity(), ciluts.on_start(&event(1, 1, 0))))
            .join()
            .unwrap()
    });
    assert_eq!(other, (0.0, Decision::Proceed));

    end(&ciluts, 1, 0, None);
    assert!(
        close(ciluts.intensity(), 0.434),
        "one commit decays CI below 0.5"
    );
    assert_eq!(start(0), Decision::Proceed);
}

/// Three contention aborts in a row: CI 0.578.
fn raise_intensity(hooks: &dyn TxHooks, slot: usize) {
    for _ in 0..3 {
        end(hooks, 1, slot, CONFLICT);
    }
}

#[test]
fn ats_serialises_high_intensity_starts_through_one_queue() {
    let ats = Arc::new(Ats::new());
    raise_intensity(&*ats, 1);
    assert_eq!(ats.on_start(&event(1, 1, 3)), Decision::Proceed);
    assert_eq!(ats.holder(), Some(1));

    let (started, second_started) = mpsc::channel();
    let second = {
        let ats = ats.clone();
        std::thread::spawn(move || {
            raise_intensity(&*ats, 2);
            let decision = ats.on_start(&event(1, 2, 3));
            started.send(decision).unwrap();
            std::thread::sleep(Duration::from_millis(1));
            end(&*ats, 1, 2, None);
        })
    };
    eventually("the second start queues", || ats.waiting() == 1);
    assert!(second_started.try_recv().is_err(), "the second start waits");

    // Below the threshold, or irrevocable, a start does not queue.
    let low = {
        let ats = ats.clone();
        std::thread::spawn(move || ats.on_start(&event(3, 3, 0)))
    };
    assert_eq!(low.join().unwrap(), Decision::Proceed);
    let irrevocable = TxEvent {
        irrevocable: true,
        ..event(1, 4, 3)
    };
    assert_eq!(ats.on_start(&irrevocable), Decision::Proceed);
    assert_eq!(ats.holder(), Some(1));

    // The end of the holder's attempt (a retry, here) hands the queue on, FIFO.
    end(&*ats, 1, 1, Some(AbortReason::Retry));
    assert_eq!(second_started.recv().unwrap(), Decision::Proceed);
    second.join().unwrap();
    assert_eq!((ats.holder(), ats.waiting()), (None, 0));

    // One commit brings CI back under the threshold: no queue.
    end(&*ats, 1, 1, None);
    assert!(ats.intensity() < 0.5);
    assert_eq!(ats.on_start(&event(1, 1, 0)), Decision::Proceed);
    assert_eq!(ats.holder(), None);
}

/// Runs `body` as a task pinned to `worker` and returns its result.
fn on_worker<T: Send + 'static>(
    runtime: &Runtime,
    worker: usize,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    runtime
        .task()
        .pinned_to(worker)
        .spawn(body)
        .unwrap()
        .join()
        .unwrap()
}

fn two_workers(mode: SyncMode) -> Runtime {
    Runtime::builder()
        .workers(2)
        .sync(mode)
        .allow_more_workers_than_cores()
        .build()
}

#[test]
fn ctluts_switches_only_when_a_likely_conflicting_id_runs() {
    SyncMode::ALL.into_iter().for_each(ctluts_switches_in);
}

fn ctluts_switches_in(mode: SyncMode) {
    let runtime = two_workers(mode);
    let ct = Arc::new(Ctluts::new(2));
    let with = |worker, body: fn(&Ctluts) -> Vec<Decision>| {
        let ct = ct.clone();
        on_worker(&runtime, worker, move || body(&ct))
    };

    // Worker 1 runs transaction 2.
    assert_eq!(
        with(1, |ct| vec![ct.on_start(&event(2, 20, 0))]),
        [Decision::Proceed]
    );
    assert_eq!(ct.running_on(1), Some(2));

    // On worker 0, transaction 1 aborts three times while 2 runs: P(1, 2) = 0.578.
    let decisions = with(0, |ct| {
        (0..3)
            .map(|aborts| {
                let decision = ct.on_start(&event(1, 10, aborts));
                end(ct, 1, 10, CONFLICT);
                decision
            })
            .collect()
    });
    assert_eq!(
        decisions,
        [Decision::Proceed; 3],
        "P stays ≤ 0.5 until the third abort"
    );
    assert!(close(ct.probability(1, 2), 0.578));
    assert_eq!(ct.probability(2, 1), 0.0, "the table is per ordered pair");
    assert_eq!(ct.running_on(0), None, "an ended attempt leaves the vector");

    // Now its start switches away, once, and announces its id for LUTS's switch.
    let decisions = with(0, |ct| {
        let first = ct.on_start(&event(1, 10, 3));
        let second = ct.on_start(&event(1, 10, 3));
        assert_eq!(current_task().unwrap().tx_id(), 1);
        vec![first, second]
    });
    assert_eq!(decisions, [Decision::SwitchAway, Decision::Proceed]);
    assert_eq!(ct.running_on(0), Some(1));

    // An id with no conflict history does not switch.
    assert_eq!(
        with(0, |ct| vec![ct.on_start(&event(3, 30, 0))]),
        [Decision::Proceed]
    );

    // A commit while 2 runs lowers P(1, 2): 0.434.
    with(0, |ct| {
        end(ct, 1, 10, None);
        vec![]
    });
    assert!(close(ct.probability(1, 2), 0.434));
    assert_eq!(
        with(0, |ct| vec![ct.on_start(&event(1, 10, 0))]),
        [Decision::Proceed]
    );
    with(0, |ct| {
        end(ct, 1, 10, CONFLICT);
        vec![]
    });
    assert!(ct.probability(1, 2) > 0.5);

    // Once 2 has ended, 1 starts without switching, whatever P(1, 2).
    with(1, |ct| {
        end(ct, 2, 20, None);
        vec![]
    });
    assert_eq!(ct.running_on(1), None);
    assert_eq!(
        with(0, |ct| vec![ct.on_start(&event(1, 10, 0))]),
        [Decision::Proceed]
    );
}

#[test]
fn restart_profile_prices_restarts_and_wasted_time() {
    let profile = RestartProfile::with_switch_cost(Duration::from_micros(100));
    let start = event(1, 0, 0);
    assert_eq!(profile.start_priority(&start), Some(0));
    assert!(!profile.is_wasting(0));

    // Restart spikes: at least 2 restarts, and above 3 × the average (0 so far).
    assert!(!profile.is_wasting(1));
    assert!(profile.is_wasting(2));

    // Committed transactions with 4 restarts each: the average climbs towards 4 and
    // the priority falls by 2 levels per restart, at most 10.
    let commit = |aborts| TxEvent {
        aborts,
        ..event(1, 0, 0)
    };
    profile.on_attempt_end(&commit(4));
    assert!(close(profile.profile().restarts, 1.0));
    assert_eq!(profile.start_priority(&start), Some(-2));
    assert!(!profile.is_wasting(3), "3 restarts are not above 3 × 1");
    assert!(profile.is_wasting(4));
    for _ in 0..20 {
        profile.on_attempt_end(&commit(40));
    }
    assert_eq!(profile.start_priority(&start), Some(-10));

    // Wasted time: an aborted attempt of 1 ms makes the average 0.25 ms > 0.1 ms.
    let fresh = RestartProfile::with_switch_cost(Duration::from_micros(100));
    fresh.on_attempt_end(&TxEvent {
        reason: CONFLICT,
        elapsed: Duration::from_millis(1),
        ..event(1, 0, 1)
    });
    assert_eq!(fresh.profile().wasted, Duration::from_micros(250));
    assert!(fresh.is_wasting(0));
    // Commits waste nothing: 4 of them bring the average to 79 µs.
    for _ in 0..4 {
        fresh.on_attempt_end(&commit(0));
    }
    assert!(!fresh.is_wasting(0), "{:?}", fresh.profile());
    // Retries and explicit aborts are not wasted work.
    fresh.on_attempt_end(&TxEvent {
        reason: Some(AbortReason::Retry),
        elapsed: Duration::from_secs(1),
        ..event(1, 0, 0)
    });
    assert!(!fresh.is_wasting(0));
}

/// What `waster` and `other` log, in order, on a 1-worker runtime where `waster`
/// (made wasting, priority 0) spawns `other`, lets it run its `setup`, then reaches
/// `decide`; and how many switches happened.
fn descheduling_order(
    mode: SyncMode,
    other_setup: fn(&RestartProfile),
    decide: fn(&RestartProfile, &Mutex<Vec<&'static str>>),
) -> (Vec<&'static str>, u64) {
    let runtime = Runtime::builder().workers(1).sync(mode).build();
    let profile = Arc::new(RestartProfile::with_switch_cost(Duration::from_micros(1)));
    let log = Arc::new(Mutex::new(Vec::new()));
    let waster = {
        let (profile, log) = (profile.clone(), log.clone());
        runtime.spawn(move || {
            profile.on_attempt_end(&TxEvent {
                reason: CONFLICT,
                elapsed: Duration::from_millis(1),
                ..event(1, 0, 1)
            });
            let other = {
                let (profile, log) = (profile.clone(), log.clone());
                lutra_sched::spawn(move || {
                    other_setup(&profile);
                    lutra_sched::yield_now();
                    log.lock().unwrap().push("other");
                })
            };
            lutra_sched::yield_now();
            decide(&profile, &log);
            other.join().unwrap();
        })
    };
    waster.join().unwrap();
    let log = log.lock().unwrap().clone();
    (log, runtime.switches())
}

fn abort_decision(profile: &RestartProfile, log: &Mutex<Vec<&'static str>>) {
    let decision = profile.on_abort(&TxEvent {
        reason: CONFLICT,
        ..event(1, 0, 1)
    });
    assert_eq!(decision, Decision::Proceed);
    log.lock().unwrap().push("waster");
}

#[test]
fn restart_profile_deschedules_a_wasting_task_for_one_that_is_not() {
    SyncMode::ALL.into_iter().for_each(deschedules_in);
}

fn deschedules_in(mode: SyncMode) {
    // A clean runnable task of the same priority takes the wasting task's turn.
    let (log, switches) = descheduling_order(mode, |_| {}, abort_decision);
    assert_eq!(log, ["other", "waster"]);
    assert_eq!(switches, 1);

    // A wasting one does not.
    let wasting = |profile: &RestartProfile| {
        profile.on_attempt_end(&TxEvent {
            reason: CONFLICT,
            elapsed: Duration::from_millis(1),
            ..event(2, 1, 1)
        });
    };
    let (log, switches) = descheduling_order(mode, wasting, abort_decision);
    assert_eq!(log, ["waster", "other"]);
    assert_eq!(switches, 0);

    // Inside a transaction (after an abort) the wasting task keeps its turn against a
    // lower-priority task (-4: 2 restarts on average); before a fresh transaction it
    // gives it up (within 5 levels).
    let lower = |profile: &RestartProfile| {
        profile.on_attempt_end(&TxEvent {
            aborts: 8,
            ..event(2, 1, 0)
        });
        assert_eq!(profile.start_priority(&event(2, 1, 0)), Some(-4));
    };
    let (log, switches) = descheduling_order(mode, lower, |profile, log| {
        abort_decision(profile, log);
        profile.on_start(&event(1, 0, 0));
        log.lock().unwrap().push("fresh start");
    });
    assert_eq!(log, ["waster", "other", "fresh start"]);
    assert_eq!(switches, 1);
}

/// The counts of one end-to-end run.
#[derive(Debug, Clone, Copy)]
struct Counts {
    /// Aborts while the holder held the hot `TVar` (counted when it let go).
    aborts: u64,
    /// Time wasted in those aborted attempts (printed, never compared).
    #[allow(dead_code)]
    wasted: Duration,
    /// Switches over the whole run.
    switches: u64,
}

const LOSERS: usize = 2;
const INDEPENDENT_TASKS: usize = 8;
const ROUNDS: usize = 10;

/// Transaction 1 (the holder, alone on worker 0) locks the hot `TVar` and keeps it
/// until every independent task has finished; transaction 2 (the losers) always
/// conflicts with it on that `TVar`; independent transactions (ids 3 to 6, each task
/// on its own `TVar`) share worker 1 with the losers and yield between rounds.
/// Write-back with encounter-time locking and the suicide manager, as LUTS's
/// evaluation; `own_manager` lets restart-profile bring its `Priority` manager, under
/// which a loser waits (yielding its worker) rather than aborts.
///
/// Under round-robin a loser restarts at once for 64 aborts before the engine makes it
/// yield; the switching policies send it away after a few. Counted when the holder lets
/// go, the numbers depend only on the order of events, not on timing.
fn scripted_run(mode: SyncMode, policy: Policy, own_manager: bool) -> Counts {
    let runtime = two_workers(mode);
    // The scripted holder spins outside the engine (it never notices a kill) until
    // other transactions have committed: the engine's irrevocable fallback would kill
    // it, wait for it and hold back those commits. The comparison counts restarts,
    // so the fallback is off.
    let config = policy.configure(Config::default().with_irrevocable_after_aborts(0), 2);
    let config = config.with_design(DesignKind::WriteBackEtl);
    let stm = Stm::new(if own_manager {
        config
    } else {
        config.with_manager(cm::Suicide)
    });
    let hot = Arc::new(TVar::new(0u64));
    let locked = Arc::new(AtomicBool::new(false));
    let release = Arc::new(AtomicBool::new(false));
    let holder = {
        let (stm, hot) = (stm.clone(), hot.clone());
        let (locked, release) = (locked.clone(), release.clone());
        runtime.task().pinned_to(0).spawn(move || {
            stm.transaction().site(1).run(|tx| {
                tx.modify(&*hot, |count| count + 1)?;
                locked.store(true, Ordering::SeqCst);
                while !release.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
                Ok(())
            })
        })
    }
    .unwrap();
    eventually("the holder locks", || locked.load(Ordering::SeqCst));
    // Every task of worker 1 is queued before any runs a transaction (spawning from
    // here could otherwise lag behind the losers' aborts).
    let start = Arc::new(Barrier::new(LOSERS + INDEPENDENT_TASKS));
    let on_worker_1 = |body: Box<dyn FnOnce() + Send>| {
        let start = start.clone();
        runtime
            .task()
            .pinned_to(1)
            .spawn(move || {
                start.wait();
                body()
            })
            .unwrap()
    };
    let losers: Vec<_> = (0..LOSERS)
        .map(|_| {
            let (stm, hot) = (stm.clone(), hot.clone());
            on_worker_1(Box::new(move || {
                stm.transaction()
                    .site(2)
                    .run(|tx| tx.modify(&*hot, |count| count + 1));
            }))
        })
        .collect();
    let finished = Arc::new(AtomicUsize::new(0));
    let at_release = Arc::new(Mutex::new(None));
    let independent: Vec<_> = (0..INDEPENDENT_TASKS)
        .map(|n| {
            let (stm, finished) = (stm.clone(), finished.clone());
            let (release, at_release) = (release.clone(), at_release.clone());
            on_worker_1(Box::new(move || {
                let own = TVar::new(0u64);
                for _ in 0..ROUNDS {
                    stm.transaction()
                        .site(3 + (n % 4) as u32)
                        .run(|tx| tx.modify(&own, |count| count + 1));
                    lutra_sched::yield_now();
                }
                if finished.fetch_add(1, Ordering::SeqCst) + 1 == INDEPENDENT_TASKS {
                    *at_release.lock().unwrap() = Some(stm.stats().total);
                    release.store(true, Ordering::SeqCst);
                }
            }))
        })
        .collect();
    holder.join().unwrap();
    losers.into_iter().for_each(|task| task.join().unwrap());
    independent
        .into_iter()
        .for_each(|task| task.join().unwrap());
    let total = stm.atomically(|tx| tx.read(&*hot));
    assert_eq!(total, 1 + LOSERS as u64, "{policy}: lost updates");
    let at_release = at_release.lock().unwrap().expect("counted at the release");
    Counts {
        aborts: at_release.total_aborts(),
        wasted: at_release.wasted,
        switches: runtime.switches(),
    }
}

#[test]
fn switching_policies_switch_and_abort_less_than_round_robin_on_a_scripted_conflict() {
    SyncMode::ALL.into_iter().for_each(switching_policies_in);
}

fn switching_policies_in(mode: SyncMode) {
    let counts: Vec<(Policy, Counts)> = Policy::ALL
        .into_iter()
        .map(|policy| {
            (
                policy,
                within(Duration::from_secs(60), policy.name(), move || {
                    scripted_run(mode, policy, false)
                }),
            )
        })
        .collect();
    for (policy, counts) in &counts {
        eprintln!("{mode} {policy:>16} (suicide): {counts:?}");
    }
    let prioritised = within(Duration::from_secs(60), "restart-profile", move || {
        scripted_run(mode, Policy::RestartProfile, true)
    });
    eprintln!("restart-profile (priority): {prioritised:?}");
    let of = |wanted| {
        counts
            .iter()
            .find(|(policy, _)| *policy == wanted)
            .unwrap()
            .1
    };
    let round_robin = of(Policy::RoundRobin);
    assert_eq!(round_robin.switches, 0, "round-robin never switches");
    assert!(
        round_robin.aborts >= 64 * LOSERS as u64,
        "each loser restarts 64 times before it yields: {round_robin:?}"
    );
    for policy in [Policy::Ciluts, Policy::Ctluts, Policy::RestartProfile] {
        let counts = of(policy);
        assert!(counts.switches > 0, "{policy}: {counts:?}");
        assert!(
            counts.aborts * 2 < round_robin.aborts,
            "{policy} aborts {} vs round-robin {}",
            counts.aborts,
            round_robin.aborts
        );
    }
}
