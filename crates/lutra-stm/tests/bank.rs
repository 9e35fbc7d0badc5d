//! Conservation stress test (tinySTM's bank): 64 threads on 2 cores move money between
//! accounts and audit the bank, for every design × contention manager.
//!
//! Checks:
//! - opacity: every audit (a read-only transaction summing all accounts) asserts the
//!   total inside the transaction, so even an attempt that would abort fails the test
//!   if it sees a snapshot that never existed;
//! - nothing lost or duplicated: at the end the total is unchanged and every account
//!   holds its initial balance plus exactly the transfers that committed (each thread
//!   keeps a private ledger of its committed transfers);
//! - statistics: the engine counted exactly one commit per `atomically` call.

mod common;

use common::{all_configs, config, within};
use lutra_stm::{DesignKind, Stm, TVar};
use std::sync::{Arc, Barrier};
use std::time::Duration;

const ACCOUNTS: usize = 48;
const INITIAL: i64 = 1_000;
const AUDIT_EVERY: usize = 6;

struct Outcome {
    /// Net change of every account from this thread's committed transfers.
    ledger: Vec<i64>,
    transactions: u64,
}

fn audit(stm: &Stm, accounts: &[TVar<i64>]) {
    let expected = INITIAL * accounts.len() as i64;
    let total = stm.atomically(|tx| {
        let mut total = 0;
        for account in accounts {
            total += tx.read(account)?;
        }
        assert_eq!(total, expected, "an audit saw an inconsistent snapshot");
        Ok(total)
    });
    assert_eq!(total, expected);
}

/// Moves money from one account to one or two others; returns the committed deltas.
fn transfer(stm: &Stm, accounts: &[TVar<i64>], rng: &mut fastrand::Rng) -> Vec<(usize, i64)> {
    let from = rng.usize(0..accounts.len());
    let mut to = rng.usize(0..accounts.len() - 1);
    if to >= from {
        to += 1;
    }
    let amount = rng.i64(1..=50);
    let split = rng.bool();
    stm.atomically(|tx| {
        tx.modify(&accounts[from], |balance| balance - amount)?;
        if split {
            // Half to `to`, the rest to the account after it (may be `from` itself).
            let other = (to + 1) % accounts.len();
            tx.modify(&accounts[to], |balance| balance + amount / 2)?;
            tx.modify(&accounts[other], |balance| balance + (amount - amount / 2))?;
            Ok(vec![
                (from, -amount),
                (to, amount / 2),
                (other, amount - amount / 2),
            ])
        } else {
            tx.modify(&accounts[to], |balance| balance + amount)?;
            Ok(vec![(from, -amount), (to, amount)])
        }
    })
}

fn run_bank(design: DesignKind, manager: &'static str, orec_bits: u32, threads: usize, ops: usize) {
    let stm = Stm::new(config(design, manager).with_orec_bits(orec_bits));
    let accounts: Arc<Vec<TVar<i64>>> =
        Arc::new((0..ACCOUNTS).map(|_| TVar::new(INITIAL)).collect());
    let start = Arc::new(Barrier::new(threads));
    let workers: Vec<_> = (0..threads)
        .map(|id| {
            let (stm, accounts, start) = (stm.clone(), accounts.clone(), start.clone());
            std::thread::spawn(move || {
                let mut rng = fastrand::Rng::with_seed(id as u64 * 7919 + orec_bits as u64);
                let mut ledger = vec![0i64; ACCOUNTS];
                start.wait();
                for op in 0..ops {
                    if op % AUDIT_EVERY == id % AUDIT_EVERY {
                        audit(&stm, &accounts);
                    } else {
                        for (account, delta) in transfer(&stm, &accounts, &mut rng) {
                            ledger[account] += delta;
                        }
                    }
                }
                Outcome {
                    ledger,
                    transactions: ops as u64,
                }
            })
        })
        .collect();
    let mut expected = vec![INITIAL; ACCOUNTS];
    let mut transactions = 0;
    for worker in workers {
        let outcome = worker.join().expect("a bank thread failed");
        for (balance, delta) in expected.iter_mut().zip(outcome.ledger) {
            *balance += delta;
        }
        transactions += outcome.transactions;
    }
    audit(&stm, &accounts);
    let balances: Vec<i64> = stm.atomically(|tx| accounts.iter().map(|a| tx.read(a)).collect());
    assert_eq!(
        balances,
        expected,
        "{}/{manager}: balances differ from the committed transfers",
        design.name()
    );
    let stats = stm.stats().total;
    assert_eq!(
        stats.commits,
        transactions + 2,
        "{}/{manager}: one commit per transaction ({stats})",
        design.name()
    );
}

#[test]
fn bank_conserves_money_for_every_design_and_manager() {
    within(Duration::from_secs(100), "bank", || {
        for (design, manager) in all_configs() {
            run_bank(design, manager, 20, 64, 300);
        }
    });
}

/// A 16-record table: most accounts share records with others (false conflicts, and
/// records locked by a transaction that also guard words it only reads).
#[test]
fn bank_conserves_money_with_colliding_records() {
    within(Duration::from_secs(100), "bank-colliding", || {
        for (design, manager) in all_configs() {
            run_bank(design, manager, 4, 64, 150);
        }
    });
}
