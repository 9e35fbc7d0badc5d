//! The bank workload (tinySTM's `bank` test): accounts, transfers between two random
//! accounts, and read-only audits that sum every balance.
//!
//! # Invariants
//! - The total of all balances never changes. Every audit checks it *inside* its
//!   transaction (or under its lock): on an opaque STM no attempt may ever see another
//!   total, not even one that would abort, so an audit that sees one panics the run.
//! - After each run the total is checked once more.

use crate::harness::contender::Contender;
use crate::harness::measure::{Run, Sample, timed};
use crate::workloads::thread_rng;
use lutra_stm::{Stm, TVar};
use std::hint::black_box;
use std::sync::{Mutex, RwLock};
use std::time::Duration;

/// Statistics site of transfers.
pub const SITE_TRANSFER: u32 = 10;
/// Statistics site of audits.
pub const SITE_AUDIT: u32 = 11;

/// Every account's opening balance.
pub const OPENING_BALANCE: i64 = 1_000;

/// A bank many threads use at once.
pub trait SharedBank: Sync {
    /// Moves `amount` from account `from` to account `to` (they may be equal).
    ///
    /// # Panics
    /// If an index is out of range.
    fn transfer(&self, from: usize, to: usize, amount: i64);

    /// Sums every balance, checking the sum against the expected total.
    ///
    /// # Panics
    /// If the sum differs from the total: the isolation this bank promises is broken.
    fn audit(&self) -> i64;
}

/// Plain balances: the sequential baseline, and the data behind the global locks.
#[derive(Clone, Debug)]
pub struct Accounts {
    balances: Vec<i64>,
    total: i64,
}

impl Accounts {
    /// `count` accounts at [`OPENING_BALANCE`].
    pub fn new(count: usize) -> Self {
        Self {
            balances: vec![OPENING_BALANCE; count],
            total: OPENING_BALANCE * count as i64,
        }
    }

    /// As [`SharedBank::transfer`].
    pub fn transfer(&mut self, from: usize, to: usize, amount: i64) {
        self.balances[from] -= amount;
        self.balances[to] += amount;
    }

    /// As [`SharedBank::audit`].
    pub fn audit(&self) -> i64 {
        let sum = self.balances.iter().sum();
        assert_eq!(sum, self.total, "an audit saw money appear or vanish");
        sum
    }
}

impl SharedBank for Mutex<Accounts> {
    fn transfer(&self, from: usize, to: usize, amount: i64) {
        self.lock()
            .expect("a benchmark thread panicked")
            .transfer(from, to, amount);
    }

    fn audit(&self) -> i64 {
        self.lock().expect("a benchmark thread panicked").audit()
    }
}

impl SharedBank for RwLock<Accounts> {
    fn transfer(&self, from: usize, to: usize, amount: i64) {
        self.write()
            .expect("a benchmark thread panicked")
            .transfer(from, to, amount);
    }

    fn audit(&self) -> i64 {
        self.read().expect("a benchmark thread panicked").audit()
    }
}

/// Accounts in [`TVar`]s of one engine.
#[derive(Debug)]
pub struct StmBank {
    stm: Stm,
    accounts: Box<[TVar<i64>]>,
    total: i64,
}

impl StmBank {
    /// `count` accounts at [`OPENING_BALANCE`], used through `stm` only.
    pub fn new(stm: Stm, count: usize) -> Self {
        Self {
            stm,
            accounts: (0..count).map(|_| TVar::new(OPENING_BALANCE)).collect(),
            total: OPENING_BALANCE * count as i64,
        }
    }

    /// The engine.
    pub fn stm(&self) -> &Stm {
        &self.stm
    }
}

impl SharedBank for StmBank {
    fn transfer(&self, from: usize, to: usize, amount: i64) {
        let (from, to) = (&self.accounts[from], &self.accounts[to]);
        self.stm.transaction().site(SITE_TRANSFER).run(|tx| {
            tx.modify(from, |balance| balance - amount)?;
            tx.modify(to, |balance| balance + amount)
        });
    }

    fn audit(&self) -> i64 {
        self.stm.transaction().site(SITE_AUDIT).run(|tx| {
            let mut sum = 0;
            for account in self.accounts.iter() {
                sum += tx.read(account)?;
            }
            assert_eq!(
                sum, self.total,
                "an audit transaction saw money appear or vanish (opacity broken)"
            );
            Ok(sum)
        })
    }
}

/// One operation of the bank workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BankOp {
    /// Sum every balance (read-only).
    Audit,
    /// Move the amount (third) from the first account to the second.
    Transfer(usize, usize, i64),
}

/// A bank workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BankWorkload {
    /// Number of accounts.
    pub accounts: usize,
    /// Percentage of operations that are audits; the rest are transfers.
    pub audit_percent: u32,
}

impl BankWorkload {
    /// Percentage of operations that update (transfers).
    pub fn update_percent(&self) -> u32 {
        100 - self.audit_percent.min(100)
    }

    /// Draws the next operation: an audit, or a transfer of 1..=10 between two
    /// random accounts.
    pub fn next_op(&self, rng: &mut fastrand::Rng) -> BankOp {
        if rng.u32(0..100) < self.audit_percent {
            BankOp::Audit
        } else {
            let from = rng.usize(0..self.accounts);
            let to = rng.usize(0..self.accounts);
            BankOp::Transfer(from, to, rng.i64(1..=10))
        }
    }

    /// Draws the next operation and applies it to `bank`.
    pub fn apply(&self, bank: &impl SharedBank, rng: &mut fastrand::Rng) {
        match self.next_op(rng) {
            BankOp::Audit => {
                black_box(bank.audit());
            }
            BankOp::Transfer(from, to, amount) => bank.transfer(from, to, amount),
        }
    }

    /// Runs the workload on a shared bank.
    pub fn run_shared(&self, bank: &impl SharedBank, threads: usize, duration: Duration) -> Run {
        timed(threads, duration, thread_rng, |rng| self.apply(bank, rng))
    }

    /// Measures `contender` on `threads` threads for `duration`; the sample's
    /// `final_total` is the audited total after the run.
    ///
    /// # Panics
    /// If any audit, or the final one, sees a wrong total.
    pub fn measure(&self, contender: Contender, threads: usize, duration: Duration) -> Sample {
        match contender {
            Contender::Sequential | Contender::Ceiling => {
                let init = |index| (Accounts::new(self.accounts), thread_rng(index));
                let run = timed(threads, duration, init, |(accounts, rng)| {
                    match self.next_op(rng) {
                        BankOp::Audit => {
                            black_box(accounts.audit());
                        }
                        BankOp::Transfer(from, to, amount) => accounts.transfer(from, to, amount),
                    }
                });
                Sample {
                    run,
                    ..Sample::default()
                }
            }
            Contender::Mutex => {
                self.measure_shared(&Mutex::new(Accounts::new(self.accounts)), threads, duration)
            }
            Contender::RwLock => self.measure_shared(
                &RwLock::new(Accounts::new(self.accounts)),
                threads,
                duration,
            ),
            Contender::Stm { .. } => {
                let stm = contender.engine().expect("an STM contender has an engine");
                let bank = StmBank::new(stm.clone(), self.accounts);
                let run = self.run_shared(&bank, threads, duration);
                let stats = stm.stats().total;
                Sample {
                    run,
                    stats: Some(stats),
                    final_total: Some(bank.audit()),
                }
            }
        }
    }

    fn measure_shared(&self, bank: &impl SharedBank, threads: usize, duration: Duration) -> Sample {
        let run = self.run_shared(bank, threads, duration);
        Sample {
            run,
            stats: None,
            final_total: Some(bank.audit()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_contender_conserves_the_total() {
        let workload = BankWorkload {
            accounts: 8,
            audit_percent: 20,
        };
        for contender in Contender::sweep(&lutra_stm::DesignKind::ALL, &["suicide", "timestamp"]) {
            let sample = workload.measure(contender, 3, Duration::from_millis(10));
            assert!(sample.run.ops > 0, "{contender:?}");
            if let Some(total) = sample.final_total {
                assert_eq!(total, 8 * OPENING_BALANCE);
            }
        }
    }
}
