//! Weak-memory model checks of the engine's own protocols on loom: the `loom`
//! feature swaps the engine's atomics, fences, mutexes, parking and thread-locals, and
//! the transactional data words, for loom's (`src/sync.rs`). Loom explores every
//! interleaving up to a preemption bound and, for each load, every store the memory
//! model lets it read; so a check here fails when an `ORDERING:` argument is wrong,
//! not only when an interleaving is. Run with
//! `cargo test --release -p lutra-stm --features loom --test loom` (the checks inside
//! the library: `--lib loom_model`); `--nocapture` prints how many executions each
//! explored.
//!
//! Tables are tiny (4 ownership records, 8 descriptors), statistics off, the
//! `Suicide` manager (an abort never waits) unless said otherwise, two threads.
//!
//! - read/validate/commit (`access.rs`, `commit.rs`), both designs: a transfer
//!   between two `TVar`s beside an audit that asserts the total inside its
//!   transaction (opacity) and returns a serial state. Fails if the release fence
//!   before write-back, the read protocol's acquire fence, or the release store that
//!   unlocks a record is weakened. The same with the audit begun read-only
//!   (`read_only.rs`: no read set, a newer version aborts it).
//! - blocking `retry` (`waiting.rs`), both designs: a consumer that retries on an
//!   empty cell is always woken by the producer's commit (loom reports a lost wake-up
//!   as a deadlock). Fails if the waiter re-reads its records with a plain load
//!   instead of a read-modify-write. Also through `or_else`: woken by a location only
//!   the first, rolled-back branch read.
//! - kills (`access.rs`'s conflicts, `registry.rs`'s kill handshake, the waits for a
//!   committer, a holder and a killer): two writers of two `TVar`s in opposite orders
//!   under encounter-time locking and `Timestamp`; neither deadlocks (loom reports
//!   it) nor loses its update. A liveness and lost-update check of the real kill path
//!   rather than of one ordering: no weakening tried made it fail.
//! - the straight begin and commit (`straight.rs`): the serial check's audit made twice
//!   by one descriptor on the straight paths; the second begin meets the serial
//!   attempt and must withdraw its announcement.
//! - the solo gate (`solo.rs`), both designs: a soloist's raw word transfer beside a
//!   newcomer that creates its descriptor and audits. Fails if the soloist's exit
//!   store, the newcomer's load of the gate or its increment of the live count is
//!   relaxed, or if the soloist skips its second test of the live count.
//! - serial attempts (`serial.rs`), both designs: a serial attempt's plain writes
//!   beside an audit. Fails if the store that ends the serial attempt is relaxed.
//!
//! Not checked here, because loom's model of `SeqCst` accesses is weaker than the
//! language's (its README: they are modelled as `AcqRel`) and fails executions that
//! C++20's total order `S` forbids:
//! - the commit gate of irrevocable attempts (`gate.rs`), a Dekker pair of `SeqCst`
//!   operations whose words also take release stores: loom lets `drain` read an
//!   updater's status as `Active` (a release store) after the updater's `Committing`
//!   CAS (`SeqCst`) has run, so the irrevocable attempt fails validation and runs
//!   twice (the shuttle model checks cover the gate);
//! - privatization (`Stm::quiesce`): loom lets `quiesce`'s `SeqCst` load of a
//!   reader's status return its initial `Idle` after the reader's `Active` store, its
//!   `SeqCst` fence (`epoch.rs`) and its `SeqCst` load of the clock, which read the
//!   clock before the privatizer's `SeqCst` increment that precedes `quiesce`: a
//!   cycle in `S`, since the load reads a value older than a store that happens
//!   before that fence. Loom does not relate `SeqCst` loads to `SeqCst` fences
//!   (`tests/alloc.rs` tests `quiesce` on threads).
//!
//! In the library, `--lib loom_model`: epoch reclamation (`epoch.rs`: a block is never
//! released while a reader that announced before its unlinking can read it; fails if
//! either full fence is weakened) and the kill handshake (`registry.rs`: a victim
//! learns the identity of the killer that won; fails if the killer's release store is
//! relaxed).

#![cfg(feature = "loom")]

use loom::thread;
use lutra_stm::{Config, DesignKind, Stm, TVar, TxDescriptor, TxOptions, cm};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

/// Preemptions per execution unless `LOOM_MAX_PREEMPTIONS` says otherwise: loom
/// explores every schedule with at most this many. Two miss the audit's failure
/// without the release fence before write-back; four take about three times as long.
const PREEMPTIONS: usize = 3;

fn tiny(design: DesignKind) -> Stm {
    tiny_with(design, Arc::new(cm::Suicide))
}

fn tiny_with(design: DesignKind, manager: Arc<dyn cm::ContentionManager>) -> Stm {
    Stm::new(
        Config::default()
            .with_design(design)
            .with_shared_manager(manager)
            .with_orec_bits(2)
            .with_max_descriptors(8)
            .with_stats(false),
    )
}

/// Explores `model` with loom: every schedule with at most [`PREEMPTIONS`]
/// preemptions, each load reading any store the memory model allows.
fn check(model: impl Fn() + Sync + Send + 'static) {
    check_within(PREEMPTIONS, model);
}

/// [`check`] with at most `preemptions` preemptions (unless `LOOM_MAX_PREEMPTIONS`
/// says otherwise).
fn check_within(preemptions: usize, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(preemptions);
    // Loom's default (1,000 branch points per execution) is a few transactions.
    builder.max_branches = 100_000;
    let executions = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = executions.clone();
    builder.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        model()
    });
    let executions = executions.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("{executions} executions explored");
}

/// One transfer of 10 from `[0]` to `[1]` (on different records) in a spawned thread;
/// the main thread audits both accounts in one transaction, begun read-only (no read
/// set: `read_only.rs`) if `read_only`.
fn transfer_and_audit(design: DesignKind, read_only: bool) {
    let stm = tiny(design);
    let accounts = Arc::new([TVar::new(100i64), TVar::new(100i64)]);
    let mover = {
        let (stm, accounts) = (stm.clone(), accounts.clone());
        thread::spawn(move || {
            stm.atomically(|tx| {
                tx.modify(&accounts[0], |b| b - 10)?;
                tx.modify(&accounts[1], |b| b + 10)
            })
        })
    };
    let audit = stm.transaction();
    let audit = if read_only { audit.read_only() } else { audit };
    let seen = audit.run(|tx| {
        let a = tx.read(&accounts[0])?;
        let b = tx.read(&accounts[1])?;
        assert_eq!(a + b, 200, "the audit saw an inconsistent snapshot");
        Ok((a, b))
    });
    mover.join().unwrap();
    assert!(
        seen == (100, 100) || seen == (90, 110),
        "the audit committed a state no serial order produces: {seen:?}"
    );
    let end = stm.atomically(|tx| Ok((tx.read(&accounts[0])?, tx.read(&accounts[1])?)));
    assert_eq!(end, (90, 110));
}

#[test]
fn audits_see_a_serial_state_write_back_ctl() {
    check(|| transfer_and_audit(DesignKind::WriteBackCtl, false));
}

#[test]
fn audits_see_a_serial_state_write_back_etl() {
    check(|| transfer_and_audit(DesignKind::WriteBackEtl, false));
}

#[test]
fn read_only_audits_see_a_serial_state_write_back_ctl() {
    check(|| transfer_and_audit(DesignKind::WriteBackCtl, true));
}

#[test]
fn read_only_audits_see_a_serial_state_write_back_etl() {
    check(|| transfer_and_audit(DesignKind::WriteBackEtl, true));
}

/// A consumer that `retry`s while the cell is empty, and a producer that fills it.
fn retry_is_woken(design: DesignKind) {
    let stm = tiny(design);
    let cell = Arc::new(TVar::new(0u32));
    let consumer = {
        let (stm, cell) = (stm.clone(), cell.clone());
        thread::spawn(move || {
            stm.atomically(|tx| {
                let n = tx.read(&cell)?;
                if n == 0 {
                    return tx.retry();
                }
                tx.write(&cell, n - 1)?;
                Ok(n)
            })
        })
    };
    stm.atomically(|tx| tx.write(&cell, 1));
    assert_eq!(consumer.join().unwrap(), 1);
    assert_eq!(stm.atomically(|tx| tx.read(&cell)), 0);
}

/// The consumer's first branch reads `[0]` (and writes `[2]`, rolled back), the
/// second reads `[1]`; both retry until the producer fills `[0]`, which only the
/// first branch read.
fn or_else_is_woken(design: DesignKind) {
    let stm = tiny(design);
    let cells = Arc::new([TVar::new(0u32), TVar::new(0u32), TVar::new(0u32)]);
    let consumer = {
        let (stm, cells) = (stm.clone(), cells.clone());
        thread::spawn(move || {
            stm.atomically(|tx| {
                tx.or_else(
                    |tx| {
                        let n = tx.read(&cells[0])?;
                        if n == 0 {
                            tx.write(&cells[2], 99)?;
                            return tx.retry();
                        }
                        tx.write(&cells[0], n - 1)
                    },
                    |tx| {
                        if tx.read(&cells[1])? == 0 {
                            return tx.retry();
                        }
                        tx.write(&cells[1], 0)
                    },
                )
            })
        })
    };
    stm.atomically(|tx| tx.write(&cells[0], 1));
    consumer.join().unwrap();
    let end = stm.atomically(|tx| {
        Ok([
            tx.read(&cells[0])?,
            tx.read(&cells[1])?,
            tx.read(&cells[2])?,
        ])
    });
    assert_eq!(end, [0, 0, 0], "a retried branch's write survived");
}

#[test]
fn retry_is_always_woken_write_back_ctl() {
    check(|| retry_is_woken(DesignKind::WriteBackCtl));
}

#[test]
fn retry_is_always_woken_write_back_etl() {
    check(|| retry_is_woken(DesignKind::WriteBackEtl));
}

#[test]
fn or_else_is_woken_by_a_location_only_the_first_branch_read() {
    check(|| or_else_is_woken(DesignKind::WriteBackCtl));
}

/// Runs a raw word transaction of `tx` (`body`, as the C ABI does) until it commits.
fn until_committed<T>(
    tx: &mut TxDescriptor,
    body: impl FnMut(&mut TxDescriptor) -> Result<T, lutra_stm::Abort>,
) -> T {
    until_committed_on(tx, false, body)
}

/// [`until_committed`], beginning and committing on the straight paths (`straight.rs`)
/// when `straight` and they apply, as the C ABI does.
fn until_committed_on<T>(
    tx: &mut TxDescriptor,
    straight: bool,
    mut body: impl FnMut(&mut TxDescriptor) -> Result<T, lutra_stm::Abort>,
) -> T {
    loop {
        if !(straight && tx.try_begin(0)) {
            tx.begin(TxOptions::default());
        }
        let committed = body(tx).and_then(|value| {
            if straight && tx.try_commit() {
                return Ok(value);
            }
            tx.commit().map(|()| value)
        });
        match committed {
            Ok(value) => return value,
            Err(abort) => {
                tx.rollback(abort.reason());
                thread::yield_now();
            }
        }
    }
}

/// The main thread's descriptor, allowed to run solo and alone in the engine, moves 1
/// between two words; a newcomer thread creates its descriptor meanwhile and audits
/// the sum. The soloist is the main thread so that no preemption is spent before its
/// attempt starts.
fn solo_and_newcomer(design: DesignKind) {
    let stm = tiny(design);
    let words = Arc::new([TVar::new(100usize), TVar::new(100usize)]);
    let mut soloist = TxDescriptor::new(&stm).unwrap();
    soloist.allow_solo(true);
    let newcomer = {
        let (stm, words) = (stm.clone(), words.clone());
        thread::spawn(move || {
            let mut tx = TxDescriptor::new(&stm).unwrap();
            let (a, b) = (words[0].as_word_ptr(), words[1].as_word_ptr());
            // SAFETY: the words live in the `Arc` and are only accessed through
            // transactions of this engine.
            let sum = until_committed(&mut tx, |tx| unsafe {
                let x = tx.load(a)?;
                // A point where the soloist's writes may land: loom's exploration does
                // not put them between the two loads otherwise, and misses a soloist
                // that entered beside this descriptor (the gate's second test of the
                // live count removed).
                thread::yield_now();
                Ok(x + tx.load(b)?)
            });
            assert_eq!(sum, 200, "an audit saw half a solo transfer");
        })
    };
    let (a, b) = (
        words[0].as_word_ptr().cast_mut(),
        words[1].as_word_ptr().cast_mut(),
    );
    // SAFETY: as above.
    until_committed(&mut soloist, |tx| unsafe {
        let from = tx.load(a)?;
        tx.store(a, from - 1, usize::MAX)?;
        let to = tx.load(b)?;
        tx.store(b, to + 1, usize::MAX)
    });
    drop(soloist);
    newcomer.join().unwrap();
    let end = stm.atomically(|tx| Ok((tx.read(&words[0])?, tx.read(&words[1])?)));
    assert_eq!(end, (99, 101), "the solo transfer was lost");
}

#[test]
fn solo_attempts_never_run_beside_a_newcomer_write_back_ctl() {
    check(|| solo_and_newcomer(DesignKind::WriteBackCtl));
}

#[test]
fn solo_attempts_never_run_beside_a_newcomer_write_back_etl() {
    check(|| solo_and_newcomer(DesignKind::WriteBackEtl));
}

/// The word of `var` as the atomic it is under the `loom` feature (`src/sync.rs`):
/// what uninstrumented code writes with plain stores.
fn plain_word(var: &TVar<usize>) -> &loom::sync::atomic::AtomicUsize {
    // SAFETY: under the `loom` feature a `TVar`'s word is a loom `AtomicUsize`, at the
    // address `as_word_ptr` gives; it lives as long as `var`.
    unsafe { &*var.as_word_ptr().cast::<loom::sync::atomic::AtomicUsize>() }
}

/// A thread whose serial attempt moves 1 from `words[0]` to `words[1]` with plain
/// (relaxed) stores, as GCC's uninstrumented code does.
fn spawn_serial_move(stm: &Stm, words: &Arc<[TVar<usize>; 2]>) -> thread::JoinHandle<()> {
    let (stm, words) = (stm.clone(), words.clone());
    thread::spawn(move || {
        let mut tx = TxDescriptor::new(&stm).unwrap();
        until_committed(&mut tx, |tx| {
            tx.become_serial()?;
            let (a, b) = (plain_word(&words[0]), plain_word(&words[1]));
            a.store(a.load(Relaxed) - 1, Relaxed);
            b.store(b.load(Relaxed) + 1, Relaxed);
            Ok(())
        });
    })
}

/// A serial attempt moves 1 between two words with plain (relaxed) stores, as GCC's
/// uninstrumented code does; an audit runs meanwhile.
fn serial_move_and_audit(design: DesignKind) {
    let stm = tiny(design);
    let words = Arc::new([TVar::new(100usize), TVar::new(100usize)]);
    let serial = spawn_serial_move(&stm, &words);
    let sum = stm.atomically(|tx| Ok(tx.read(&words[0])? + tx.read(&words[1])?));
    assert_eq!(sum, 200, "an audit saw half of a serial move");
    serial.join().unwrap();
    let end = stm.atomically(|tx| Ok((tx.read(&words[0])?, tx.read(&words[1])?)));
    assert_eq!(end, (99, 101), "the serial move was lost");
}

/// As [`serial_move_and_audit`], the audit made twice by one descriptor whose
/// transactions begin and commit on the straight paths (`straight.rs`) when they can:
/// the second begins there, and must withdraw from a serial attempt it meets.
fn serial_move_and_straight_audits(design: DesignKind) {
    let stm = tiny(design);
    let words = Arc::new([TVar::new(100usize), TVar::new(100usize)]);
    let serial = spawn_serial_move(&stm, &words);
    let mut auditor = TxDescriptor::new(&stm).unwrap();
    let (a, b) = (words[0].as_word_ptr(), words[1].as_word_ptr());
    for _ in 0..2 {
        // SAFETY: the words live in the `Arc`; besides the serial attempt, only
        // transactions of this engine access them.
        let sum = until_committed_on(&mut auditor, true, |tx| unsafe {
            Ok(tx.load(a)? + tx.load(b)?)
        });
        assert_eq!(sum, 200, "a straight audit saw half of a serial move");
    }
    drop(auditor);
    serial.join().unwrap();
    let end = stm.atomically(|tx| Ok((tx.read(&words[0])?, tx.read(&words[1])?)));
    assert_eq!(end, (99, 101), "the serial move was lost");
}

#[test]
fn straight_begins_withdraw_from_a_serial_attempt() {
    check(|| serial_move_and_straight_audits(DesignKind::WriteBackCtl));
}

#[test]
fn serial_attempts_run_alone_write_back_ctl() {
    check(|| serial_move_and_audit(DesignKind::WriteBackCtl));
}

#[test]
fn serial_attempts_run_alone_write_back_etl() {
    check(|| serial_move_and_audit(DesignKind::WriteBackEtl));
}

/// Encounter-time locking under `Timestamp`: two writers increment two `TVar`s in
/// opposite orders, so each may meet the other's lock; the older kills the younger,
/// which waits for its killer before it restarts.
fn opposite_writers() {
    let stm = tiny_with(DesignKind::WriteBackEtl, Arc::new(cm::Timestamp));
    let vars = Arc::new([TVar::new(0u32), TVar::new(0u32)]);
    let increment = |stm: &Stm, vars: &[TVar<u32>; 2], first: usize| {
        stm.atomically(|tx| {
            tx.modify(&vars[first], |v| v + 1)?;
            tx.modify(&vars[1 - first], |v| v + 1)
        })
    };
    let other = {
        let (stm, vars) = (stm.clone(), vars.clone());
        thread::spawn(move || increment(&stm, &vars, 1))
    };
    increment(&stm, &vars, 0);
    other.join().unwrap();
    let end = stm.atomically(|tx| Ok((tx.read(&vars[0])?, tx.read(&vars[1])?)));
    assert_eq!(end, (2, 2), "an increment was lost");
}

/// Two preemptions: three explore 250,000 executions in half a minute.
#[test]
fn killed_writers_neither_deadlock_nor_lose_updates() {
    check_within(2, opposite_writers);
}
