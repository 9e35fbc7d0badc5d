//! Solo attempts (`TxDescriptor::allow_solo`): uninstrumented while a descriptor is
//! alone with its engine, instrumented as soon as another exists; aborts undo their
//! direct writes. The interleavings of the protocol are model-checked in `model.rs`.

use lutra_stm::{AbortReason, Stm, TxDescriptor, TxOptions};

#[test]
fn a_lone_descriptor_runs_solo_and_its_aborts_undo_its_writes() {
    let stm = Stm::default();
    let mut word: usize = 5;
    let addr = &raw mut word;
    let mut tx = TxDescriptor::new(&stm).unwrap();
    tx.allow_solo(true);
    tx.begin(TxOptions::default());
    assert!(tx.is_solo());
    // SAFETY: `word` outlives the transactions and is only accessed through them.
    unsafe {
        let seen = tx.load(addr).unwrap();
        tx.store(addr, seen + 1, usize::MAX).unwrap();
        tx.store(addr, seen + 2, 0xff).unwrap();
        assert_eq!(tx.load(addr), Ok(7));
    }
    tx.rollback(AbortReason::Explicit);
    assert_eq!(word, 5, "the abort left a solo write behind");
    tx.begin(TxOptions::default());
    // SAFETY: as above.
    unsafe { tx.store(addr, 9, usize::MAX).unwrap() };
    tx.commit().unwrap();
    assert_eq!(word, 9);
}

#[test]
fn a_second_descriptor_ends_solo_attempts() {
    let stm = Stm::default();
    let mut tx = TxDescriptor::new(&stm).unwrap();
    tx.allow_solo(true);
    tx.begin(TxOptions::default());
    assert!(tx.is_solo());
    tx.commit().unwrap();
    let other = TxDescriptor::new(&stm).unwrap();
    tx.begin(TxOptions::default());
    assert!(!tx.is_solo(), "solo beside another descriptor");
    tx.commit().unwrap();
    drop(other);
    tx.begin(TxOptions::default());
    assert!(tx.is_solo(), "alone again, yet instrumented");
    tx.commit().unwrap();
}

#[test]
fn descriptors_that_did_not_ask_never_run_solo() {
    let stm = Stm::default();
    let mut tx = TxDescriptor::new(&stm).unwrap();
    tx.begin(TxOptions::default());
    assert!(!tx.is_solo());
    tx.commit().unwrap();
}

#[test]
fn a_solo_attempt_refuses_retry() {
    let stm = Stm::default();
    let mut word: usize = 0;
    let mut tx = TxDescriptor::new(&stm).unwrap();
    tx.allow_solo(true);
    tx.begin(TxOptions::default());
    // SAFETY: as above.
    unsafe { tx.load(&raw mut word).unwrap() };
    let refused = tx.wait_for_change();
    assert_eq!(
        refused.map_err(|abort| abort.reason()),
        Err(AbortReason::Misuse)
    );
    assert!(!tx.is_active());
}
