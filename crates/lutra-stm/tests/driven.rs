//! The API for drivers that run attempts themselves (`driven.rs`): a non-blocking
//! `retry` wait woken by a later commit, or at once when the read set has already
//! changed; misuse reported; checkpoints that undo writes and lift a `retry` doom.

use lutra_stm::{AbortReason, Stm, TVar, TxDescriptor, TxOptions};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Wake, Waker};

#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn retried_reading(stm: &Stm, var: &TVar<u64>) -> TxDescriptor {
    let mut desc = TxDescriptor::new(stm).unwrap();
    desc.begin(TxOptions::site(3));
    let mut tx = desc.transaction();
    tx.read(var).unwrap();
    assert_eq!(tx.retry::<()>().unwrap_err().reason(), AbortReason::Retry);
    desc
}

#[test]
fn watch_is_woken_by_a_later_commit_and_unregisters_on_drop() {
    let stm = Stm::default();
    let (var, other) = (TVar::new(0u64), TVar::new(0u64));
    let mut desc = retried_reading(&stm, &var);
    let count = Arc::new(Count::default());
    let watch = desc.watch_for_change(Waker::from(count.clone())).unwrap();
    assert!(!desc.is_active(), "the attempt is rolled back");
    stm.atomically(|tx| tx.write(&other, 1));
    assert!(
        !watch.has_fired(),
        "a write to an unread location does not wake"
    );
    stm.atomically(|tx| tx.write(&var, 1));
    assert!(watch.has_fired());
    assert_eq!(count.0.load(Ordering::SeqCst), 1);
    drop(watch);
    stm.atomically(|tx| tx.write(&var, 2));
    assert_eq!(
        count.0.load(Ordering::SeqCst),
        1,
        "no wake after the watch is dropped"
    );
    assert_eq!(stm.stats().by_site[&3].retry_waits, 1);
}

#[test]
fn watch_fires_at_once_when_the_read_set_already_changed() {
    let stm = Stm::default();
    let var = TVar::new(0u64);
    let mut desc = retried_reading(&stm, &var);
    // A commit between the read and the registration.
    std::thread::scope(|s| {
        s.spawn(|| stm.atomically(|tx| tx.write(&var, 5)));
    });
    let count = Arc::new(Count::default());
    let watch = desc.watch_for_change(Waker::from(count.clone())).unwrap();
    assert!(watch.has_fired());
    assert_eq!(count.0.load(Ordering::SeqCst), 1);
}

#[test]
fn watch_of_an_attempt_that_read_nothing_is_a_misuse() {
    let stm = Stm::default();
    let mut desc = TxDescriptor::new(&stm).unwrap();
    desc.begin(TxOptions::default());
    let _ = desc.transaction().retry::<()>();
    let count = Arc::new(Count::default());
    let error = desc.watch_for_change(Waker::from(count)).unwrap_err();
    assert_eq!(error.reason(), AbortReason::Misuse);
    assert!(!desc.is_active());
}

#[test]
fn checkpoints_undo_writes_and_lift_a_retry() {
    let stm = Stm::default();
    let (a, b) = (TVar::new(String::from("a0")), TVar::new(0u64));
    let mut desc = TxDescriptor::new(&stm).unwrap();
    desc.begin(TxOptions::default());
    desc.transaction().write(&b, 1).unwrap();
    let outer = desc.checkpoint();
    desc.transaction().write(&a, "a1".into()).unwrap();
    let inner = desc.checkpoint();
    desc.transaction().write(&b, 2).unwrap();
    let _ = desc.transaction().retry::<()>();
    desc.roll_back_to(inner);
    assert_eq!(desc.doomed(), None, "the retry doom is lifted");
    assert_eq!(desc.transaction().read(&b).unwrap(), 1);
    assert_eq!(desc.transaction().read(&a).unwrap(), "a1");
    desc.keep(outer);
    desc.commit().unwrap();
    assert_eq!(
        stm.atomically(|tx| Ok((tx.read(&a)?, tx.read(&b)?))),
        ("a1".into(), 1)
    );
}

#[test]
fn a_conflict_doom_survives_a_rollback_to_a_checkpoint() {
    let stm = Stm::default();
    let var = TVar::new(0u64);
    let mut desc = TxDescriptor::new(&stm).unwrap();
    desc.begin(TxOptions::default());
    let checkpoint = desc.checkpoint();
    let _ = desc.transaction().abort::<()>();
    desc.roll_back_to(checkpoint);
    assert_eq!(desc.doomed(), Some(AbortReason::Explicit));
    assert!(desc.transaction().read(&var).is_err());
    desc.rollback(AbortReason::Explicit);
}

/// Words 1024 apart: records 1024 apart, which share a bucket of the wait table
/// (1024 buckets) but are different records (2^20 of them).
static WORDS: [AtomicUsize; 2048] = [const { AtomicUsize::new(0) }; 2048];

#[test]
fn a_commit_to_a_record_sharing_the_bucket_does_not_wake() {
    let stm = Stm::default();
    let (read, neighbour) = (WORDS[0].as_ptr(), WORDS[1024].as_ptr());
    let mut desc = TxDescriptor::new(&stm).unwrap();
    desc.begin(TxOptions::site(4));
    // SAFETY: static words, only accessed through the engine in this test.
    unsafe { desc.load(read).unwrap() };
    let _ = desc.doom(AbortReason::Retry);
    let count = Arc::new(Count::default());
    let watch = desc.watch_for_change(Waker::from(count.clone())).unwrap();
    let mut writer = TxDescriptor::new(&stm).unwrap();
    for (target, woken) in [(neighbour, 0), (read, 1)] {
        writer.begin(TxOptions::site(5));
        // SAFETY: as above.
        unsafe { writer.store(target, 7, usize::MAX).unwrap() };
        writer.commit().unwrap();
        assert_eq!(
            count.0.load(Ordering::SeqCst),
            woken,
            "wake-ups after a commit"
        );
        assert_eq!(watch.has_fired(), woken == 1);
    }
}
