//! The read through a descriptor's read front (`TxDescriptor::try_load_through_front`,
//! the C ABI's `stm_load`): a closed front reads nothing, an open one reads and
//! records the read (a later conflicting commit aborts the reader), a solo attempt's
//! front reads memory until the attempt is doomed, and bad addresses never load.

use lutra_stm::{AbortReason, ReadFront, Stm, TxDescriptor, TxOptions};
use std::ptr::NonNull;

/// Reads `addr` through `tx`'s front.
fn read(tx: &mut TxDescriptor, addr: *const usize) -> Option<usize> {
    let front = tx.read_front();
    // SAFETY: the descriptor's own front, unused elsewhere during the call; `addr`
    // is NULL, misaligned (both checked) or a live word of the test.
    unsafe { TxDescriptor::try_load_through_front(front, addr) }
}

#[test]
fn a_closed_front_reads_nothing() {
    let word: usize = 3;
    let mut closed = ReadFront::CLOSED;
    // SAFETY: a closed front, never written; `word` is a live aligned word.
    let seen = unsafe { TxDescriptor::try_load_through_front(NonNull::from(&mut closed), &word) };
    assert_eq!(seen, None);
}

#[test]
fn a_front_is_closed_outside_attempts() {
    let stm = Stm::default();
    let word: usize = 3;
    let mut tx = TxDescriptor::new(&stm).unwrap();
    assert_eq!(read(&mut tx, &word), None, "before the first attempt");
    tx.begin(TxOptions::default());
    tx.commit().unwrap();
    assert_eq!(read(&mut tx, &word), None, "after a commit");
}

#[test]
fn a_read_through_the_front_is_recorded_and_validated() {
    let stm = Stm::default();
    let mut word: usize = 5;
    let mut other_word: usize = 0;
    let (addr, other_addr) = (&raw mut word, &raw mut other_word);
    let mut reader = TxDescriptor::new(&stm).unwrap();
    let mut writer = TxDescriptor::new(&stm).unwrap();
    reader.begin(TxOptions::default());
    // The first read grows the empty read set on the full path; later ones take the
    // front.
    // SAFETY: both words outlive the transactions and are only accessed through them.
    unsafe { reader.load(other_addr).unwrap() };
    assert_eq!(read(&mut reader, addr), Some(5));
    writer.begin(TxOptions::default());
    // SAFETY: as above.
    unsafe { writer.store(addr, 6, usize::MAX).unwrap() };
    writer.commit().unwrap();
    // SAFETY: as above.
    unsafe { reader.store(other_addr, 1, usize::MAX).unwrap() };
    assert_eq!(
        reader.commit().map_err(|abort| abort.reason()),
        Err(AbortReason::Validation),
        "the read through the front was not validated at commit"
    );
    assert_eq!((word, other_word), (6, 0));
}

#[test]
fn bad_addresses_never_load() {
    let stm = Stm::default();
    let words = [7usize; 2];
    let mut tx = TxDescriptor::new(&stm).unwrap();
    tx.begin(TxOptions::default());
    // SAFETY: the word outlives the transaction.
    unsafe { tx.load(&words[1]).unwrap() };
    assert_eq!(read(&mut tx, &words[0]), Some(7), "the front is open");
    assert_eq!(read(&mut tx, std::ptr::null()), None);
    let misaligned = words.as_ptr().cast::<u8>().wrapping_add(3).cast::<usize>();
    assert_eq!(read(&mut tx, misaligned), None);
    tx.commit().unwrap();
}

#[test]
fn a_solo_front_reads_memory_until_the_attempt_is_doomed() {
    let stm = Stm::default();
    let word: usize = 9;
    let mut tx = TxDescriptor::new(&stm).unwrap();
    tx.allow_solo(true);
    tx.begin(TxOptions::default());
    assert!(tx.is_solo());
    assert_eq!(read(&mut tx, &word), Some(9));
    tx.doom(AbortReason::Explicit);
    assert_eq!(
        read(&mut tx, &word),
        None,
        "a doomed solo attempt read memory"
    );
    tx.rollback(AbortReason::Explicit);
    assert_eq!(read(&mut tx, &word), None, "after the solo attempt");
}
