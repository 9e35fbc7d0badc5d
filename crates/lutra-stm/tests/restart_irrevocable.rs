//! The engine additions for cooperative locks and priority experiments:
//! `restart_irrevocable` runs the transaction again irrevocable, `wait_until` waits
//! inside an attempt without reading and notices a kill, and hooks see the
//! transaction's priority.

use lutra_stm::{AbortReason, Config, DesignKind, Stm, TVar, TxEvent, TxHooks, cm::Aggressive};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

#[test]
fn restart_irrevocable_reruns_once_irrevocable() {
    let stm = Stm::default();
    let counter = TVar::new(0u32);
    let mut attempts = Vec::new();
    stm.atomically(|tx| {
        attempts.push(tx.is_irrevocable());
        tx.modify(&counter, |n| n + 1)?;
        if tx.is_irrevocable() {
            Ok(())
        } else {
            tx.restart_irrevocable()
        }
    });
    assert_eq!(attempts, [false, true]);
    assert_eq!(stm.atomically(|tx| tx.read(&counter)), 1);
    let stats = stm.stats().total;
    assert_eq!(stats.aborts_for(AbortReason::Irrevocable), 1);
    assert_eq!(stats.irrevocable_commits, 1);
}

#[test]
fn wait_until_returns_when_done_and_aborts_when_killed() {
    let stm = Stm::default();
    stm.atomically(|tx| tx.wait_until(|| true));

    // Under encounter-time locking a waiter holding a lock is killed by an
    // aggressive writer: its wait ends with the kill instead of deadlocking.
    let stm = Stm::new(
        Config::default()
            .with_design(DesignKind::WriteBackEtl)
            .with_manager(Aggressive),
    );
    let word = Arc::new(TVar::new(0u32));
    let (locked, killed) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let waiter = {
        let (stm, word, locked, killed) =
            (stm.clone(), word.clone(), locked.clone(), killed.clone());
        std::thread::spawn(move || {
            stm.atomically(|tx| {
                tx.write(&word, 1)?;
                if killed.load(Ordering::SeqCst) {
                    return Ok(());
                }
                locked.store(true, Ordering::SeqCst);
                let waited = tx.wait_until(|| false);
                killed.store(true, Ordering::SeqCst);
                waited
            })
        })
    };
    while !locked.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    stm.atomically(|tx| tx.write(&word, 2));
    waiter.join().unwrap();
    assert!(killed.load(Ordering::SeqCst));
    assert_eq!(stm.stats().total.aborts_for(AbortReason::Killed), 1);
}

#[test]
fn hooks_see_the_priority() {
    #[derive(Default)]
    struct Seen(AtomicI64);
    impl TxHooks for Seen {
        fn on_commit(&self, event: &TxEvent) {
            self.0.store(event.priority, Ordering::SeqCst);
        }
        fn start_priority(&self, event: &TxEvent) -> Option<i64> {
            (event.site == 2).then_some(42)
        }
    }
    let seen = Arc::new(Seen::default());
    let stm = Stm::new(Config::default().with_hooks(seen.clone()));
    stm.transaction().priority(7).run(|_| Ok(()));
    assert_eq!(seen.0.load(Ordering::SeqCst), 7);
    stm.transaction().site(2).priority(7).run(|_| Ok(()));
    assert_eq!(
        seen.0.load(Ordering::SeqCst),
        42,
        "start_priority's answer wins"
    );
}
