//! The hook contract schedulers rely on (`hooks.rs`):
//! - the start hook sees the starting transaction's site and no aborts, also on a
//!   descriptor reused from an earlier transaction that aborted;
//! - `on_attempt_end` is called exactly once per attempt, for commits, aborts,
//!   `retry` waits and panics, with the reason and (statistics on) the duration;
//! - `start_priority` becomes the transaction's contention priority.

mod common;

use common::within;
use lutra_stm::cm::{ContentionManager, Resolution, TxView};
use lutra_stm::{
    AbortReason, Config, Decision, DesignKind, Stm, TVar, TxDescriptor, TxEvent, TxHooks, TxOptions,
};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Records every hook call.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<(&'static str, TxEvent)>>,
    priority: Option<i64>,
}

impl Recorder {
    fn push(&self, hook: &'static str, event: &TxEvent) {
        self.calls.lock().unwrap().push((hook, *event));
    }

    fn take(&self) -> Vec<(&'static str, TxEvent)> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }

    fn count(&self, hook: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|(h, _)| *h == hook)
            .count()
    }
}

impl TxHooks for Recorder {
    fn on_start(&self, event: &TxEvent) -> Decision {
        self.push("start", event);
        Decision::Proceed
    }

    fn on_commit(&self, event: &TxEvent) {
        self.push("commit", event);
    }

    fn on_abort(&self, event: &TxEvent) -> Decision {
        self.push("abort", event);
        Decision::Proceed
    }

    fn on_attempt_end(&self, event: &TxEvent) {
        self.push("end", event);
    }

    fn start_priority(&self, _event: &TxEvent) -> Option<i64> {
        self.priority
    }
}

fn engine(recorder: &Arc<Recorder>) -> Stm {
    Stm::new(Config::default().with_hooks(recorder.clone()))
}

#[test]
fn the_start_hook_sees_the_starting_transaction_not_the_previous_one() {
    let recorder = Arc::new(Recorder::default());
    let stm = engine(&recorder);
    let var = TVar::new(0u32);
    stm.transaction().site(5).run(|tx| {
        if tx.aborts_so_far() < 2 {
            return tx.abort();
        }
        tx.modify(&var, |n| n + 1)
    });
    recorder.take();
    stm.transaction()
        .site(9)
        .run(|tx| tx.modify(&var, |n| n + 1));
    let calls = recorder.take();
    let (hook, first) = calls[0];
    assert_eq!(hook, "start");
    assert_eq!((first.site, first.aborts), (9, 0), "{calls:?}");
}

#[test]
fn every_attempt_ends_exactly_once_whatever_the_way() {
    within(Duration::from_secs(30), "attempt ends", || {
        let recorder = Arc::new(Recorder::default());
        let stm = engine(&recorder);
        let var = Arc::new(TVar::new(0u32));
        // Two explicit aborts, then a commit.
        stm.transaction().site(1).run(|tx| {
            if tx.aborts_so_far() < 2 {
                return tx.abort();
            }
            tx.modify(&var, |n| n + 1)
        });
        let calls = recorder.take();
        let ends: Vec<_> = calls.iter().filter(|(h, _)| *h == "end").collect();
        let reasons: Vec<_> = ends.iter().map(|(_, e)| e.reason).collect();
        assert_eq!(
            reasons,
            [
                Some(AbortReason::Explicit),
                Some(AbortReason::Explicit),
                None
            ]
        );
        assert_eq!(
            ends.iter().map(|(_, e)| e.aborts).collect::<Vec<_>>(),
            [1, 2, 2]
        );
        assert_eq!(calls.iter().filter(|(h, _)| *h == "start").count(), 3);
        assert_eq!(calls.iter().filter(|(h, _)| *h == "abort").count(), 2);
        assert_eq!(calls.iter().filter(|(h, _)| *h == "commit").count(), 1);

        // A panic ends its attempt too.
        let panicked = catch_unwind(AssertUnwindSafe(|| {
            stm.transaction().site(2).run(|tx| -> Result<(), _> {
                tx.modify(&var, |n| n + 1)?;
                panic!("boom")
            })
        }));
        assert!(panicked.is_err());
        let calls = recorder.take();
        let ends: Vec<_> = calls.iter().filter(|(h, _)| *h == "end").collect();
        assert_eq!(ends.len(), 1);
        assert_eq!(ends[0].1.reason, Some(AbortReason::Panic));

        // A retry ends its attempt; the woken attempt starts and ends again.
        let consumer = {
            let (stm, var) = (stm.clone(), var.clone());
            std::thread::spawn(move || {
                stm.transaction().site(3).run(|tx| {
                    if tx.read(&*var)? < 10 {
                        return tx.retry();
                    }
                    Ok(())
                })
            })
        };
        while recorder.count("end") == 0 {
            std::thread::yield_now();
        }
        stm.atomically(|tx| tx.write(&*var, 10));
        consumer.join().unwrap();
        let calls = recorder.take();
        let site3: Vec<_> = calls.iter().filter(|(_, e)| e.site == 3).collect();
        let starts = site3.iter().filter(|(h, _)| *h == "start").count();
        let ends: Vec<_> = site3.iter().filter(|(h, _)| *h == "end").collect();
        assert_eq!(starts, ends.len(), "{site3:?}");
        assert_eq!(ends[0].1.reason, Some(AbortReason::Retry));
        assert_eq!(ends.last().unwrap().1.reason, None);
    });
}

#[test]
fn an_attempt_end_reports_how_long_the_attempt_ran() {
    let recorder = Arc::new(Recorder::default());
    let stm = engine(&recorder);
    let var = TVar::new(0u32);
    stm.atomically(|tx| {
        std::thread::sleep(Duration::from_millis(2));
        tx.modify(&var, |n| n + 1)
    });
    let calls = recorder.take();
    let (_, end) = calls.iter().find(|(h, _)| *h == "end").unwrap();
    assert!(end.elapsed >= Duration::from_millis(1), "{:?}", end.elapsed);
}

/// Records the priorities a conflict is decided between; the asker gives way.
#[derive(Debug, Default, Clone)]
struct Witness(Arc<Mutex<Vec<(i64, i64)>>>);

impl ContentionManager for Witness {
    fn name(&self) -> &'static str {
        "witness"
    }

    fn resolve(&self, me: &TxView, other: &TxView) -> Resolution {
        self.0.lock().unwrap().push((me.priority, other.priority));
        Resolution::AbortSelf
    }
}

#[test]
fn the_start_priority_hook_sets_the_contention_priority() {
    let witness = Witness::default();
    let recorder = Arc::new(Recorder {
        priority: Some(7),
        ..Recorder::default()
    });
    let stm = Stm::new(
        Config::default()
            .with_design(DesignKind::WriteBackEtl)
            .with_manager(witness.clone())
            .with_hooks(recorder),
    );
    let mut word: usize = 0;
    let addr = &mut word as *mut usize;
    let mut holder = TxDescriptor::new(&stm).unwrap();
    let mut asker = TxDescriptor::new(&stm).unwrap();
    holder.begin(TxOptions {
        priority: -3,
        ..TxOptions::default()
    });
    asker.begin(TxOptions::default());
    // SAFETY: `word` is an aligned word that outlives both transactions, accessed only
    // through them.
    unsafe {
        holder.store(addr, 1, usize::MAX).unwrap();
        assert!(asker.store(addr, 2, usize::MAX).is_err());
    }
    holder.commit().unwrap();
    asker.rollback(AbortReason::WriteConflict);
    assert_eq!(witness.0.lock().unwrap().as_slice(), [(7, 7)]);
    assert_eq!(holder.options().priority, 7);
}
