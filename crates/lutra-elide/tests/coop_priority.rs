//! Priority without inversion (seed 003, Section 6): the priority manager never lets
//! the higher-priority transaction lose a decision, and a high-priority transaction
//! that keeps failing validation is escalated to an irrevocable attempt, and with
//! task memory a high-priority task that lost once starts its next transactions
//! irrevocable (escalation in advance, keyed by task rather than by descriptor).

use lutra_elide::coop::{CountingManager, TaskIdentity, TaskKey, TaskMemory, ValidationEscalation};
use lutra_stm::cm::{self, ContentionManager, TxView};
use lutra_stm::{AbortReason, Config, Decision, DesignKind, NoHooks, Stm, TVar, TxEvent, TxHooks};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Every pair of a grid of transactions, both ways round.
#[test]
fn priority_manager_never_lets_the_higher_priority_lose() {
    let counting = CountingManager::new(cm::by_name("priority").unwrap());
    let mut views = Vec::new();
    for priority in -2..=2 {
        for size in [0, 1, 7, 100] {
            for age in [1, 5, 9] {
                let slot = views.len();
                views.push(TxView {
                    priority,
                    size,
                    age,
                    slot,
                });
            }
        }
    }
    for me in &views {
        for other in &views {
            if me.slot != other.slot {
                counting.resolve(me, other);
            }
        }
    }
    let decisions = counting.decisions();
    assert!(decisions.mixed > 0);
    assert_eq!(decisions.inversions, 0);

    let size_matters = CountingManager::new(cm::by_name("size_matters").unwrap());
    for me in &views {
        for other in views.iter().filter(|other| other.slot != me.slot) {
            size_matters.resolve(me, other);
        }
    }
    assert!(
        size_matters.decisions().inversions > 0,
        "SizeMatters ignores priority"
    );
}

/// A transaction of priority `holder` write-locks `word` (encounter-time locking) and
/// keeps it locked until the manager has decided a conflict with a transaction of
/// priority `attacker` that writes the same word: a conflict between two priorities
/// that happens on any machine, however loaded.
fn scripted_conflict(
    stm: &Stm,
    counting: &CountingManager,
    word: &TVar<u64>,
    holder: i64,
    attacker: i64,
) {
    let before = counting.decisions().mixed;
    let holding = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            stm.transaction().priority(holder).run(|tx| {
                tx.modify(word, |n| n + 1)?;
                // First attempt only: a doomed holder's retry runs straight through.
                if !holding.swap(true, Ordering::SeqCst) {
                    while counting.decisions().mixed == before {
                        std::thread::yield_now();
                    }
                }
                Ok(())
            });
        });
        while !holding.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        stm.transaction()
            .priority(attacker)
            .run(|tx| tx.modify(word, |n| n + 1));
    });
    assert!(counting.decisions().mixed > before);
}

/// Threads of different priorities fight over a few words under encounter-time
/// locking (every conflict reaches the manager); not one decision goes against the
/// higher priority. The conflicts between priorities are driven (a low-priority
/// holder attacked by a high-priority writer, and the reverse, every pair), then
/// eight threads add what contention the machine gives.
#[test]
fn priority_manager_never_inverts_under_contention() {
    let counting = Arc::new(CountingManager::new(cm::by_name("priority").unwrap()));
    let config = Config::default()
        .with_design(DesignKind::WriteBackEtl)
        .with_shared_manager(counting.clone());
    let stm = Stm::new(config);
    let words: Arc<Vec<TVar<u64>>> = Arc::new((0..4).map(|_| TVar::new(0)).collect());
    for holder in 0..3 {
        for attacker in (0..3).filter(|&a| a != holder) {
            scripted_conflict(&stm, &counting, &words[0], holder, attacker);
        }
    }
    let total = stm.transaction().run(|tx| tx.read(&words[0]));
    assert_eq!(total, 12, "every scripted transaction committed once");
    let workers: Vec<_> = (0..8)
        .map(|thread| {
            let (stm, words) = (stm.clone(), words.clone());
            std::thread::spawn(move || {
                let mut rng = fastrand::Rng::with_seed(thread);
                for _ in 0..2000 {
                    let length = rng.usize(1..8);
                    stm.transaction().priority(thread as i64 % 3).run(|tx| {
                        for step in 0..length {
                            tx.modify(&words[(step + thread as usize) % words.len()], |n| n + 1)?;
                        }
                        Ok(())
                    });
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());
    let decisions = counting.decisions();
    assert!(
        decisions.mixed >= 6,
        "no conflict between priorities: {decisions:?}"
    );
    assert_eq!(decisions.inversions, 0, "{decisions:?}");
}

/// A high-priority transaction overtaken `k` times by a low-priority writer (a
/// validation failure, never seen by the manager) runs its next attempt irrevocable.
#[test]
fn validation_losses_escalate_after_k() {
    const K: u32 = 2;
    let hooks = Arc::new(ValidationEscalation::new(
        Arc::new(NoHooks),
        Some(K),
        1,
        4096,
    ));
    let stm = Stm::new(Config::default().with_hooks(hooks.clone()));
    let (read, written) = (TVar::new(0u64), TVar::new(0u64));
    let (overtake, overtaken) = (AtomicBool::new(false), AtomicU32::new(0));
    let mut attempts = Vec::new();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for round in 1..=K {
                while !overtake.swap(false, Ordering::SeqCst) {
                    std::thread::yield_now();
                }
                stm.transaction()
                    .priority(0)
                    .run(|tx| tx.write(&read, u64::from(round)));
                overtaken.store(round, Ordering::SeqCst);
            }
        });
        stm.transaction().priority(1).run(|tx| {
            let seen = tx.read(&read)?;
            let round = tx.aborts_so_far() + 1;
            attempts.push((tx.is_irrevocable(), tx.aborts_so_far()));
            if round <= K {
                overtake.store(true, Ordering::SeqCst);
                while overtaken.load(Ordering::SeqCst) < round {
                    std::thread::yield_now();
                }
            }
            tx.write(&written, seen)
        });
    });
    assert_eq!(attempts, [(false, 0), (false, 1), (true, 2)]);
    let losses = hooks.losses();
    assert_eq!(
        (losses.aborts, losses.high_aborts, losses.escalations),
        (2, 2, 1)
    );
    assert_eq!(stm.stats().total.aborts_for(AbortReason::Validation), 2);

    // A low-priority transaction is counted but never escalated.
    let (low, high) = (hooks.losses().high_aborts, hooks.losses().escalations);
    let event = lutra_stm::TxEvent {
        slot: 7,
        priority: 0,
        aborts: 5,
        reason: Some(AbortReason::Validation),
        ..Default::default()
    };
    for _ in 0..5 {
        lutra_stm::TxHooks::on_abort(&*hooks, &event);
    }
    let start = lutra_stm::TxEvent {
        reason: None,
        ..event
    };
    assert_eq!(
        lutra_stm::TxHooks::on_start(&*hooks, &start),
        lutra_stm::Decision::Proceed
    );
    assert_eq!(
        (hooks.losses().high_aborts, hooks.losses().escalations),
        (low, high)
    );
}

thread_local! {
    /// The scripted "scheduler task" running on this thread: (id, priority).
    static TASK: std::cell::Cell<Option<(u64, i64)>> = const { std::cell::Cell::new(None) };
}

/// A scheduler stand-in: the task is whatever this thread was told it runs.
struct ThreadTask;

impl TaskIdentity for ThreadTask {
    fn current_task(&self) -> Option<TaskKey> {
        TASK.with(|task| task.get())
            .map(|(id, priority)| TaskKey { id, priority })
    }
}

fn run_as(task: (u64, i64), body: impl FnOnce()) {
    TASK.with(|current| current.set(Some(task)));
    body();
    TASK.with(|current| current.set(None));
}

fn with_memory(first: u32, max: u32, half_life: u32) -> Arc<ValidationEscalation> {
    let memory = TaskMemory {
        identity: Arc::new(ThreadTask),
        first,
        max,
        half_life,
    };
    Arc::new(ValidationEscalation::new(Arc::new(NoHooks), None, 1, 4096).with_task_memory(memory))
}

/// A high-priority task loses once to a low-priority writer; with task memory (and
/// no per-transaction streak) the restart and the task's next transactions start
/// irrevocable, even on another thread (another descriptor slot), until the window
/// closes. Another high-priority task is not escalated.
#[test]
fn task_memory_escalates_the_next_transactions_in_advance() {
    const HIGH_TASK: (u64, i64) = (1, 1);
    let hooks = with_memory(3, 8, 100);
    let stm = Stm::new(Config::default().with_hooks(hooks.clone()));
    let (read, written) = (TVar::new(0u64), TVar::new(0u64));
    let (overtake, overtaken) = (AtomicBool::new(false), AtomicBool::new(false));
    let mut attempts = Vec::new();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !overtake.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            stm.transaction().priority(0).run(|tx| tx.write(&read, 1));
            overtaken.store(true, Ordering::SeqCst);
        });
        run_as(HIGH_TASK, || {
            stm.transaction().priority(1).run(|tx| {
                let seen = tx.read(&read)?;
                attempts.push(tx.is_irrevocable());
                if !overtake.swap(true, Ordering::SeqCst) {
                    while !overtaken.load(Ordering::SeqCst) {
                        std::thread::yield_now();
                    }
                }
                tx.write(&written, seen)
            });
        });
    });
    assert_eq!(attempts, [false, true], "the restart is the window's first");

    let irrevocable = |stm: &Stm| {
        stm.transaction().priority(1).run(|tx| {
            tx.modify(&written, |n| n + 1)?;
            Ok(tx.is_irrevocable())
        })
    };
    run_as((2, 1), || {
        assert!(!irrevocable(&stm), "another task lost nothing")
    });
    std::thread::scope(|scope| {
        scope.spawn(|| {
            run_as(HIGH_TASK, || {
                let next: Vec<bool> = (0..3).map(|_| irrevocable(&stm)).collect();
                assert_eq!(next, [true, true, false], "two more, then optimistic");
            });
        });
    });
    let losses = hooks.losses();
    assert_eq!(
        (
            losses.high_aborts,
            losses.escalations,
            losses.window_escalations
        ),
        (1, 0, 3)
    );
}

/// Escalated starts that follow one loss of task 1 (`on_abort`, then `on_start`
/// until it proceeds).
fn window_after_loss(hooks: &ValidationEscalation, priority: i64) -> u32 {
    let lost = TxEvent {
        priority,
        aborts: 1,
        reason: Some(AbortReason::Validation),
        ..TxEvent::default()
    };
    hooks.on_abort(&lost);
    let start = TxEvent {
        priority,
        ..TxEvent::default()
    };
    let mut escalated = 0;
    while hooks.on_start(&start) == Decision::Serialize {
        escalated += 1;
    }
    escalated
}

fn clean_commits(hooks: &ValidationEscalation, count: u32) {
    let committed = TxEvent {
        priority: 1,
        ..TxEvent::default()
    };
    (0..count).for_each(|_| hooks.on_commit(&committed));
}

/// The window doubles with each loss up to `max`, halves every `half_life` clean
/// optimistic commits, and is forgotten at zero; low-priority tasks never get one.
#[test]
fn task_window_doubles_on_loss_and_decays_with_clean_commits() {
    let hooks = with_memory(2, 8, 2);
    run_as((1, 1), || {
        let windows: Vec<u32> = (0..4).map(|_| window_after_loss(&hooks, 1)).collect();
        assert_eq!(windows, [2, 4, 8, 8]);
        clean_commits(&hooks, 4); // 8 → 4 → 2
        assert_eq!(window_after_loss(&hooks, 1), 4);
        clean_commits(&hooks, 6); // 4 → 2 → 1 → 0: forgotten
        assert_eq!(window_after_loss(&hooks, 1), 2);
        // Irrevocable commits are no evidence of calm: the window keeps its length.
        let irrevocable = TxEvent {
            priority: 1,
            irrevocable: true,
            ..TxEvent::default()
        };
        (0..10).for_each(|_| hooks.on_commit(&irrevocable));
        assert_eq!(window_after_loss(&hooks, 1), 4);
    });
    run_as((2, 0), || assert_eq!(window_after_loss(&hooks, 0), 0));
    assert_eq!(window_after_loss(&hooks, 1), 0, "outside tasks: no memory");
}
