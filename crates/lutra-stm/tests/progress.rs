//! Progress of a transaction that keeps losing: a long reader beside a writer that
//! commits a change to what the reader read during every one of its attempts. Reads
//! are invisible, so no contention manager is ever asked: the reader fails validation
//! at every attempt, and it used to starve forever under every manager. Now its
//! attempt after `Config::irrevocable_after_aborts` aborts in a row runs irrevocable
//! and commits: at most K + 1 attempts, under every design and manager, through
//! `Stm::atomically` and through a descriptor driven by hand (as the C ABI drives it).
//!
//! The interleaving is a handshake, not timing: in each attempt that can still abort,
//! the reader reads `first`, lets the writer commit `first` and `last`, waits for the
//! commit, and reads `last` (newer than its snapshot: the snapshot cannot be
//! extended). An irrevocable attempt does not wait for the writer (whose commit waits
//! for it).

mod common;

use common::{all_configs, config, within};
use lutra_stm::{Abort, Config, Stm, TVar, Transaction, TxDescriptor, TxOptions};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

/// Words the reader sums between `first` and `last`.
const MIDDLE: usize = 200;

struct Table {
    first: TVar<u64>,
    middle: Vec<TVar<u64>>,
    last: TVar<u64>,
}

/// Starts the writer: each message on the returned sender makes it commit one
/// increment of `first` and `last`, acknowledged on the returned receiver. It stops
/// when the sender is dropped.
fn writer(
    stm: &Stm,
    table: &Arc<Table>,
) -> (Sender<()>, Receiver<()>, std::thread::JoinHandle<u64>) {
    let (go, go_seen) = channel::<()>();
    let (done, done_seen) = channel::<()>();
    let (stm, table) = (stm.clone(), table.clone());
    let handle = std::thread::spawn(move || {
        let mut commits = 0;
        while go_seen.recv().is_ok() {
            stm.atomically(|tx| {
                tx.modify(&table.first, |n| n + 1)?;
                tx.modify(&table.last, |n| n + 1)
            });
            commits += 1;
            if done.send(()).is_err() {
                break;
            }
        }
        commits
    });
    (go, done_seen, handle)
}

/// One attempt of the reader: `first`, the writer's commit (unless irrevocable), the
/// middle, `last`.
fn read_all(
    tx: &mut Transaction<'_>,
    table: &Table,
    handshake: &(Sender<()>, Receiver<()>),
) -> Result<u64, Abort> {
    let mut total = tx.read(&table.first)?;
    if !tx.is_irrevocable() {
        handshake.0.send(()).unwrap();
        handshake.1.recv().unwrap();
    }
    for word in &table.middle {
        total += tx.read(word)?;
    }
    Ok(total + tx.read(&table.last)?)
}

fn table() -> Arc<Table> {
    Arc::new(Table {
        first: TVar::new(0),
        middle: (0..MIDDLE).map(|_| TVar::new(1)).collect(),
        last: TVar::new(0),
    })
}

#[test]
fn a_reader_overtaken_at_every_attempt_commits_within_the_bound() {
    let bound = Config::IRREVOCABLE_AFTER_ABORTS + 1;
    for (design, manager) in all_configs() {
        within(
            Duration::from_secs(60),
            &format!("{design:?} {manager}"),
            move || {
                let stm = Stm::new(config(design, manager));
                let table = table();
                let (go, done, writer) = writer(&stm, &table);
                let handshake = (go, done);
                let mut attempts = 0;
                let mut last_irrevocable = false;
                let total = stm.atomically(|tx| {
                attempts += 1;
                assert!(
                    attempts <= bound,
                    "{design:?} {manager}: the reader began attempt {attempts} (at most {bound})"
                );
                last_irrevocable = tx.is_irrevocable();
                read_all(tx, &table, &handshake)
            });
                drop(handshake);
                let commits = writer.join().unwrap();
                assert_eq!(
                    attempts, bound,
                    "{design:?} {manager}: every attempt but the last was overtaken"
                );
                assert!(last_irrevocable);
                assert_eq!(commits, u64::from(bound - 1));
                assert_eq!(total, MIDDLE as u64 + 2 * commits);
            },
        );
    }
}

/// The same reader driven through a descriptor, restarting at once after each abort
/// (as the C ABI's `stm_start` / `stm_commit` loop does), with the bound lowered to 3.
#[test]
fn a_descriptor_driven_reader_commits_within_the_configured_bound() {
    for (design, manager) in all_configs() {
        within(
            Duration::from_secs(60),
            &format!("{design:?} {manager}"),
            move || {
                let stm = Stm::new(config(design, manager).with_irrevocable_after_aborts(3));
                let table = table();
                let (go, done, writer) = writer(&stm, &table);
                let handshake = (go, done);
                let mut desc = TxDescriptor::new(&stm).unwrap();
                desc.begin(TxOptions::default());
                let mut attempts = 1;
                loop {
                    let read = read_all(&mut desc.transaction(), &table, &handshake);
                    match read.and_then(|total| desc.commit().map(|()| total)) {
                        Ok(total) => {
                            assert_eq!(total, MIDDLE as u64 + 2 * (attempts - 1));
                            break;
                        }
                        Err(abort) => {
                            desc.rollback(abort.reason());
                            attempts += 1;
                            assert!(attempts <= 4, "{design:?} {manager}: attempt {attempts}");
                            desc.restart();
                        }
                    }
                }
                assert_eq!(attempts, 4);
                drop(handshake);
                writer.join().unwrap();
            },
        );
    }
}

/// With the bound off (0), the reader is overtaken for as long as the writer goes on:
/// the handshake really makes every attempt fail (the tests above do not pass by
/// luck).
#[test]
fn without_the_bound_the_overtaken_reader_keeps_aborting() {
    let stm = Stm::new(Config::default().with_irrevocable_after_aborts(0));
    let table = table();
    let (go, done, writer) = writer(&stm, &table);
    let handshake = (go, done);
    let mut attempts = 0u32;
    let total = stm.atomically(|tx| {
        attempts += 1;
        if attempts > 100 {
            // Stop the experiment: finish without the writer.
            return Ok(0);
        }
        read_all(tx, &table, &handshake)
    });
    drop(handshake);
    assert_eq!((total, writer.join().unwrap()), (0, 100));
}
