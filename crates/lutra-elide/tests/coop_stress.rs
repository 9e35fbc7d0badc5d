//! Conservation under real contention (tinySTM's bank test) with many more threads
//! than cores, through cooperative locks in every mode at once: optimistic transfers,
//! transfers that turn exclusive part-way (I/O), exclusive transfers, nested locks,
//! and read-only audits that check the total inside their own section.

use lutra_elide::coop::{CoopLock, CoopTx};
use lutra_stm::{Config, DesignKind, Stm, TVar, cm};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

const ACCOUNTS: usize = 16;
const INITIAL: i64 = 1000;
const THREADS: usize = 16;
const OPERATIONS: usize = 300;

struct Bank {
    accounts: Vec<TVar<i64>>,
    /// Protects the accounts.
    lock: CoopLock,
    /// Protects the transfer count (always taken nested in `lock`).
    ledger_lock: CoopLock,
    transfers: TVar<u64>,
}

fn run(stm: &Stm) {
    let bank = Arc::new(Bank {
        accounts: (0..ACCOUNTS).map(|_| TVar::new(INITIAL)).collect(),
        lock: CoopLock::new(),
        ledger_lock: CoopLock::new(),
        transfers: TVar::new(0),
    });
    let (io_done, bad_audits) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (stm, bank, io_done, bad_audits) = (
                stm.clone(),
                bank.clone(),
                io_done.clone(),
                bad_audits.clone(),
            );
            std::thread::spawn(move || {
                let mut rng = fastrand::Rng::with_seed(thread as u64);
                for _ in 0..OPERATIONS {
                    let (from, to) = (rng.usize(..ACCOUNTS), rng.usize(..ACCOUNTS));
                    let amount = rng.i64(1..50);
                    let kind = rng.u32(..100);
                    let transfer = |tx: &mut lutra_stm::Transaction<'_>| {
                        tx.modify(&bank.accounts[from], |b| b - amount)?;
                        if kind < 10 {
                            tx.io(|| io_done.fetch_add(1, Ordering::Relaxed))?;
                        }
                        tx.modify(&bank.accounts[to], |b| b + amount)?;
                        bank.ledger_lock
                            .nested(tx, |tx| tx.modify(&bank.transfers, |n| n + 1))
                    };
                    match kind {
                        0..=79 => bank.lock.optimistic(&stm, transfer),
                        80..=84 => bank.lock.exclusive(&stm, transfer),
                        _ => {
                            let total = bank.lock.optimistic(&stm, |tx| {
                                bank.accounts
                                    .iter()
                                    .map(|a| tx.read(a))
                                    .sum::<Result<i64, _>>()
                            });
                            if total != INITIAL * ACCOUNTS as i64 {
                                bad_audits.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());
    assert_eq!(
        bad_audits.load(Ordering::Relaxed),
        0,
        "an audit saw money vanish"
    );
    let (total, transfers) = stm.atomically(|tx| {
        let total = bank
            .accounts
            .iter()
            .map(|a| tx.read(a))
            .sum::<Result<i64, _>>()?;
        Ok((total, tx.read(&bank.transfers)?))
    });
    assert_eq!(total, INITIAL * ACCOUNTS as i64);
    let stats = stm.stats().total;
    assert_eq!(
        stats.irrevocable_commits,
        bank.lock.generation() as u64,
        "every exclusive section committed once"
    );
    assert_eq!(bank.ledger_lock.generation(), bank.lock.generation());
    assert!(!bank.lock.is_held() && !bank.ledger_lock.is_held());
    assert!(transfers > 0 && io_done.load(Ordering::Relaxed) > 0);
}

#[test]
fn conservation_under_contention_every_design_and_manager() {
    for design in DesignKind::ALL {
        for manager in ["backoff", "size_matters", "priority", "timestamp"] {
            let config = Config::default()
                .with_design(design)
                .with_shared_manager(cm::by_name(manager).unwrap());
            run(&Stm::new(config));
        }
    }
}
