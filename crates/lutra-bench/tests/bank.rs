//! The bank under every design × contention manager, with many more threads than
//! cores: audits check the total inside their transactions (an opaque engine never
//! shows them anything else), and the total is checked again after each run.

use lutra_bench::harness::contender::Contender;
use lutra_bench::workloads::bank::{BankWorkload, OPENING_BALANCE, SharedBank, StmBank};
use lutra_stm::{Config, DesignKind, Stm, cm};
use std::time::Duration;

#[test]
fn every_engine_conserves_the_total() {
    let workload = BankWorkload {
        accounts: 16,
        audit_percent: 10,
    };
    for design in DesignKind::ALL {
        for manager in cm::NAMES {
            let contender = Contender::Stm { design, manager };
            let sample = workload.measure(contender, 16, Duration::from_millis(30));
            let stats = sample.stats.expect("STM runs report statistics");
            assert!(
                stats.commits > 0,
                "{}: nothing committed",
                contender.label()
            );
            assert_eq!(stats.commits, sample.run.ops, "{}", contender.label());
            assert_eq!(sample.final_total, Some(16 * OPENING_BALANCE));
        }
    }
}

/// Transfers between two accounts only (maximal contention), audits in between.
#[test]
fn two_hot_accounts() {
    let stm = Stm::new(Config::default().with_design(DesignKind::WriteBackEtl));
    let bank = StmBank::new(stm, 2);
    std::thread::scope(|scope| {
        for thread in 0..12 {
            let bank = &bank;
            scope.spawn(move || {
                for round in 0..300 {
                    if round % 10 == 0 {
                        assert_eq!(bank.audit(), 2 * OPENING_BALANCE);
                    } else {
                        bank.transfer(thread % 2, 1 - thread % 2, 3);
                    }
                }
            });
        }
    });
    assert_eq!(bank.audit(), 2 * OPENING_BALANCE);
}
