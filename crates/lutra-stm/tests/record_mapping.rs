//! How many neighbouring words one ownership record guards depends on the access
//! path (`orec.rs`): one record per word for Rust callers (`TxDescriptor::load`,
//! `TVar`s), so neighbouring words never conflict; one record per aligned 32-byte
//! granule for the C ABI (`TxDescriptor::load_mapped::<PerGranule>`), as tinySTM,
//! so a commit to one word of a granule invalidates a read of another.
//!
//! Each test drives the interleaving with two descriptors on one thread (no timing,
//! no chance): the reader reads a word, the writer commits its neighbour, then the
//! reader writes a word of another granule and commits, which validates its read.

use lutra_stm::{
    Abort, AbortReason, PerGranule, PerWord, RecordMapping, Stm, TVar, TxDescriptor, TxOptions,
};
use std::sync::atomic::AtomicUsize;

/// Two aligned granules of four words each.
#[repr(C, align(32))]
struct Granules([AtomicUsize; 8]);

fn granules() -> Box<Granules> {
    Box::new(Granules(std::array::from_fn(|_| AtomicUsize::new(0))))
}

/// `word` read under the mapping `M` in `desc`'s running attempt.
fn load<M: RecordMapping>(desc: &mut TxDescriptor, word: &AtomicUsize) -> Result<usize, Abort> {
    // SAFETY: the words of these tests outlive every transaction, are aligned, and
    // are accessed only through the engine, each always under the same mapping.
    unsafe { desc.load_mapped::<M>(word.as_ptr()) }
}

/// `value` written to `word` under the mapping `M` in `desc`'s running attempt.
fn store<M: RecordMapping>(
    desc: &mut TxDescriptor,
    word: &AtomicUsize,
    value: usize,
) -> Result<(), Abort> {
    // SAFETY: as in `load`.
    unsafe { desc.store_mapped::<M>(word.as_ptr(), value, usize::MAX) }
}

/// The reader reads word 0 of the first granule, the writer commits word `written`
/// (of the same granule), the reader writes word 4 (the second granule) and
/// commits: the reader's commit, all under the mapping `M`.
fn read_across_a_neighbours_commit<M: RecordMapping>(written: usize) -> Result<(), Abort> {
    let stm = Stm::default();
    let words = granules();
    let (first, other) = (&words.0[0], &words.0[4]);
    let mut reader = TxDescriptor::new(&stm).unwrap();
    let mut writer = TxDescriptor::new(&stm).unwrap();
    reader.begin(TxOptions::default());
    assert_eq!(load::<M>(&mut reader, first), Ok(0));
    writer.begin(TxOptions::default());
    store::<M>(&mut writer, &words.0[written], 1).unwrap();
    writer.commit().unwrap();
    store::<M>(&mut reader, other, 1)?;
    reader.commit()
}

#[test]
fn per_word_neighbouring_words_do_not_conflict() {
    for written in 1..4 {
        assert_eq!(read_across_a_neighbours_commit::<PerWord>(written), Ok(()));
    }
}

#[test]
fn per_granule_a_commit_to_a_neighbour_in_the_granule_invalidates_a_read() {
    for written in 1..4 {
        let verdict = read_across_a_neighbours_commit::<PerGranule>(written);
        assert_eq!(
            verdict.map_err(|abort| abort.reason()),
            Err(AbortReason::Validation),
            "word {written} of the granule"
        );
    }
}

#[test]
fn per_granule_the_next_granule_does_not_conflict() {
    let stm = Stm::default();
    let words = granules();
    let mut reader = TxDescriptor::new(&stm).unwrap();
    let mut writer = TxDescriptor::new(&stm).unwrap();
    reader.begin(TxOptions::default());
    assert_eq!(load::<PerGranule>(&mut reader, &words.0[3]), Ok(0));
    writer.begin(TxOptions::default());
    store::<PerGranule>(&mut writer, &words.0[4], 1).unwrap();
    writer.commit().unwrap();
    store::<PerGranule>(&mut reader, &words.0[5], 1).unwrap();
    assert_eq!(reader.commit(), Ok(()));
}

/// Two `TVar`s side by side in one granule (as two `u32`s on a stack may be).
#[repr(C, align(32))]
struct Pair([TVar<u32>; 2]);

#[test]
fn neighbouring_tvars_do_not_conflict() {
    let stm = Stm::default();
    let pair = Pair([TVar::new(0), TVar::new(0)]);
    let other = TVar::new(0u32);
    let mut reader = TxDescriptor::new(&stm).unwrap();
    let mut writer = TxDescriptor::new(&stm).unwrap();
    reader.begin(TxOptions::default());
    assert_eq!(reader.transaction().read(&pair.0[0]), Ok(0));
    writer.begin(TxOptions::default());
    writer.transaction().write(&pair.0[1], 1).unwrap();
    writer.commit().unwrap();
    reader.transaction().write(&other, 1).unwrap();
    assert_eq!(reader.commit(), Ok(()));
}

/// The general commit (statistics on) of a transaction that writes every word of two
/// granules locks each granule's record once, though four written words map to it:
/// every word is written back, a read of the first word taken before the commit no
/// longer validates, and no record stays locked (a later writer commits to the same
/// words at once).
#[test]
fn per_granule_a_general_commit_locks_each_granule_once_and_releases_it() {
    let stm = Stm::new(lutra_stm::Config::default().with_stats(true));
    let words = granules();
    let mut reader = TxDescriptor::new(&stm).unwrap();
    reader.begin(TxOptions::default());
    assert_eq!(load::<PerGranule>(&mut reader, &words.0[0]), Ok(0));
    for round in 1..=2 {
        // A new descriptor each round: a record left locked would stop it.
        let mut writer = TxDescriptor::new(&stm).unwrap();
        writer.begin(TxOptions::default());
        for (at, word) in words.0.iter().enumerate() {
            store::<PerGranule>(&mut writer, word, round * 10 + at).unwrap();
        }
        assert_eq!(writer.commit(), Ok(()), "round {round}");
        for (at, word) in words.0.iter().enumerate() {
            assert_eq!(
                word.load(std::sync::atomic::Ordering::Relaxed),
                round * 10 + at
            );
        }
    }
    let scratch = AtomicUsize::new(0);
    store::<PerWord>(&mut reader, &scratch, 1).unwrap();
    assert_eq!(
        reader.commit().map_err(|abort| abort.reason()),
        Err(AbortReason::Validation)
    );
}
