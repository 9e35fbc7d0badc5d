//! Reads and writes through a descriptor's read front
//! (`TxDescriptor::try_load_through_front` and `try_store_through_front`, the C ABI's
//! `stm_load` and `stm_store`): a closed front reads and writes nothing; an open one
//! records its reads (a later conflicting commit aborts the reader) and buffers its
//! writes (memory changes at commit only); a solo attempt's front reads and writes
//! memory, logging the old words, until the attempt is doomed; bad addresses are
//! never touched.

use lutra_stm::{AbortReason, ReadFront, Stm, TxDescriptor, TxOptions};
use std::ptr::NonNull;

/// Reads `addr` through `tx`'s front.
fn read(tx: &mut TxDescriptor, addr: *const usize) -> Option<usize> {
    let front = tx.read_front();
    // SAFETY: the descriptor's own front, unused elsewhere during the call; `addr`
    // is NULL, misaligned (both checked) or a live word of the test.
    unsafe { TxDescriptor::try_load_through_front(front, addr) }
}

/// Writes `value` to `addr` through `tx`'s front: true if it did.
fn write(tx: &mut TxDescriptor, addr: *mut usize, value: usize) -> bool {
    let front = tx.read_front();
    // SAFETY: as in `read`, and the word is valid for writes.
    unsafe { TxDescriptor::try_store_through_front(front, addr, value) }
}

#[test]
fn a_closed_front_reads_and_writes_nothing() {
    let mut word: usize = 3;
    let mut closed = ReadFront::CLOSED;
    let front = NonNull::from(&mut closed);
    // SAFETY: a closed front, never written; `word` is a live aligned word.
    unsafe {
        assert_eq!(TxDescriptor::try_load_through_front(front, &word), None);
        assert!(!TxDescriptor::try_store_through_front(front, &mut word, 4));
    }
    assert_eq!(word, 3);
}

#[test]
fn a_write_through_an_open_front_is_buffered_until_commit() {
    let stm = Stm::default();
    let mut word: usize = 1;
    let addr = &raw mut word;
    let mut tx = TxDescriptor::new(&stm).unwrap();
    tx.begin(TxOptions::default());
    // SAFETY: the word outlives the transactions and is only accessed through them.
    unsafe { tx.store(addr, 2, usize::MAX).unwrap() };
    assert!(
        write(&mut tx, addr, 5),
        "the open front declined a second write"
    );
    // SAFETY: as above.
    assert_eq!(unsafe { addr.read() }, 1, "a buffered write reached memory");
    // SAFETY: as above.
    assert_eq!(unsafe { tx.load(addr) }, Ok(5));
    tx.commit().unwrap();
    assert_eq!(word, 5);
}

#[test]
fn a_solo_front_writes_memory_and_a_rollback_puts_it_back() {
    let stm = Stm::default();
    let mut word: usize = 1;
    let addr = &raw mut word;
    let mut tx = TxDescriptor::new(&stm).unwrap();
    tx.allow_solo(true);
    tx.begin(TxOptions::default());
    assert!(tx.is_solo());
    assert!(write(&mut tx, addr, 8));
    // SAFETY: the word outlives the transaction; a solo attempt writes in place.
    let in_memory = unsafe { addr.read() };
    assert_eq!(in_memory, 8, "a solo write waits for the commit");
    tx.rollback(AbortReason::Explicit);
    assert_eq!(word, 1, "the rollback left the solo write behind");
    tx.begin(TxOptions::default());
    tx.doom(AbortReason::Explicit);
    assert!(!write(&mut tx, addr, 9), "a doomed solo attempt wrote");
    tx.rollback(AbortReason::Explicit);
    assert_eq!(word, 1);
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
fn bad_addresses_are_never_touched() {
    let stm = Stm::default();
    let mut words = [7usize; 2];
    let mut tx = TxDescriptor::new(&stm).unwrap();
    tx.begin(TxOptions::default());
    // SAFETY: the word outlives the transaction.
    unsafe { tx.load(&words[1]).unwrap() };
    assert_eq!(read(&mut tx, &words[0]), Some(7), "the front is open");
    assert_eq!(read(&mut tx, std::ptr::null()), None);
    assert!(!write(&mut tx, std::ptr::null_mut(), 1));
    let misaligned = words
        .as_mut_ptr()
        .cast::<u8>()
        .wrapping_add(3)
        .cast::<usize>();
    assert_eq!(read(&mut tx, misaligned), None);
    assert!(!write(&mut tx, misaligned, 1));
    tx.commit().unwrap();
    assert_eq!(words, [7, 7]);
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

#[test]
fn reads_that_share_a_filter_bit_with_a_write_see_the_right_word() {
    let stm = Stm::default();
    // Words 0 and 64 share the write set's filter bit, as do 1 and 65.
    let mut words: Vec<usize> = (0..66).map(|i| i * 10).collect();
    let base = words.as_mut_ptr();
    // SAFETY: indices below the vector's length.
    let at = |i: usize| unsafe { base.add(i) };
    let mut tx = TxDescriptor::new(&stm).unwrap();
    let mut writer = TxDescriptor::new(&stm).unwrap();
    tx.begin(TxOptions::default());
    // SAFETY: the words outlive the transactions and are only accessed through them.
    unsafe {
        tx.load(at(2)).unwrap();
        tx.store(at(0), 7, usize::MAX).unwrap();
        tx.store(at(1), 0xff, 0xff).unwrap();
        assert_eq!(
            tx.load(at(64)),
            Ok(640),
            "a word not written, past the filter"
        );
        assert_eq!(tx.load(at(0)), Ok(7), "the attempt's own whole-word write");
        assert_eq!(
            tx.load(at(1)),
            Ok(0xff),
            "the attempt's own partial write, merged"
        );
    }
    assert_eq!(
        read(&mut tx, at(65)),
        None,
        "the front leaves filter hits out"
    );
    // SAFETY: as above.
    assert_eq!(unsafe { tx.load_uninlined(at(65)) }, Ok(650));
    writer.begin(TxOptions::default());
    // SAFETY: as above.
    unsafe { writer.store(at(64), 1, usize::MAX).unwrap() };
    writer.commit().unwrap();
    assert_eq!(
        tx.commit().map_err(|abort| abort.reason()),
        Err(AbortReason::Validation),
        "the read past the filter was not recorded"
    );
    assert_eq!((words[0], words[1], words[64]), (0, 10, 1));
}

/// `try_load_past_filter`, the inlined step after a read through the front declined
/// for a filter bit: it answers a word written whole with the attempt's own value and
/// reads and records a word not written, in an unindexed write set (a few writes) and
/// in an indexed one whose writes set every bit of the filter; it declines a word
/// written in part (the full read merges it).
#[test]
fn a_read_past_the_filter_answers_written_words_and_records_the_others() {
    let stm = Stm::default();
    let mut words: Vec<usize> = (0..400).map(|i| i * 10).collect();
    let base = words.as_mut_ptr();
    // SAFETY: indices below the vector's length.
    let at = |i: usize| unsafe { base.add(i) };
    // Word 64 shares the filter bit of word 0; with 100 consecutive words written,
    // every word shares a bit with a written one.
    for (writes, unwritten) in [(4usize, 64usize), (100, 150)] {
        let partial = 200 + writes;
        let mut tx = TxDescriptor::new(&stm).unwrap();
        tx.begin(TxOptions::default());
        // SAFETY: the words outlive the transactions and are only accessed through
        // them.
        unsafe {
            // A first read gives the read set its room (the front opens).
            assert_eq!(tx.load(at(399)), Ok(3990));
            for i in 0..writes {
                tx.store(at(i), 1000 + i, usize::MAX).unwrap();
            }
            tx.store(at(partial), 0xff, 0xff).unwrap();
        }
        assert_eq!(
            read(&mut tx, at(unwritten)),
            None,
            "the front took a filter hit"
        );
        for i in 0..writes {
            // SAFETY: as above.
            let value = unsafe { tx.try_load_past_filter(at(i)) };
            assert_eq!(value, Some(1000 + i), "the own write of word {i}");
        }
        // SAFETY: as above.
        unsafe {
            assert_eq!(tx.try_load_past_filter(at(unwritten)), Some(unwritten * 10));
            assert_eq!(
                tx.try_load_past_filter(at(partial)),
                None,
                "a partial write"
            );
            assert_eq!(
                tx.load_uninlined(at(partial)),
                Ok((partial * 10) & !0xff | 0xff)
            );
        }
        let mut writer = TxDescriptor::new(&stm).unwrap();
        writer.begin(TxOptions::default());
        // SAFETY: as above.
        unsafe { writer.store(at(unwritten), 1, usize::MAX).unwrap() };
        writer.commit().unwrap();
        assert_eq!(
            tx.commit().map_err(|abort| abort.reason()),
            Err(AbortReason::Validation),
            "the read past the filter was not recorded"
        );
        assert_eq!(words[unwritten], 1);
        assert_eq!(words[0], 0, "an aborted write reached memory");
        words[unwritten] = unwritten * 10;
    }
}
