//! Transactions larger than the engine's set limit (`Config::max_set_entries`, made
//! small here): they used to abort with `Capacity` at every attempt, forever and
//! without a word, and an irrevocable one ran again (its output twice). Now a re-read
//! needs no new entry (the read set is compacted), a transaction that still outgrows
//! the sets commits on its next attempt, irrevocable, and an irrevocable attempt never
//! aborts for its size.
//!
//! Each closure counts its runs and fails at once past the bound, so the old
//! behaviour fails these tests instead of hanging them.

mod common;

use common::{all_configs, config, within};
use lutra_stm::{AbortReason, Config, DesignKind, Stm, TVar, Transaction};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The set limit of these tests.
const LIMIT: usize = 64;
/// Locations a large transaction touches: well past the limit.
const WORDS: usize = 1_000;

fn small(design: DesignKind) -> Stm {
    Stm::new(
        Config::default()
            .with_design(design)
            .with_max_set_entries(LIMIT),
    )
}

fn words(count: usize) -> Vec<TVar<u64>> {
    (0..count).map(|at| TVar::new(at as u64)).collect()
}

fn sum(tx: &mut Transaction<'_>, words: &[TVar<u64>]) -> Result<u64, lutra_stm::Abort> {
    words.iter().map(|word| tx.read(word)).sum()
}

/// Counts a run of a closure and fails past `most` runs.
fn count_run(runs: &mut u32, most: u32, what: &str) {
    *runs += 1;
    assert!(
        *runs <= most,
        "{what}: run {runs} times (at most {most} expected)"
    );
}

#[test]
fn a_read_set_past_the_limit_commits_on_the_irrevocable_restart() {
    for design in DesignKind::ALL {
        let stm = small(design);
        let words = words(WORDS);
        let mut runs = 0;
        let mut irrevocable = Vec::new();
        let total = stm.atomically(|tx| {
            count_run(&mut runs, 2, "a read-only transaction past the limit");
            irrevocable.push(tx.is_irrevocable());
            sum(tx, &words)
        });
        assert_eq!(total, (0..WORDS as u64).sum::<u64>());
        assert_eq!(irrevocable, [false, true], "{design:?}");
        let stats = stm.stats().total;
        assert_eq!(stats.aborts_for(AbortReason::Capacity), 1, "{design:?}");
        assert_eq!(stats.irrevocable_commits, 1, "{design:?}");
    }
}

#[test]
fn a_write_set_past_the_limit_commits_on_the_irrevocable_restart() {
    for design in DesignKind::ALL {
        let stm = small(design);
        let words = words(WORDS);
        let mut runs = 0;
        stm.atomically(|tx| {
            count_run(&mut runs, 2, "a writing transaction past the limit");
            for word in &words {
                tx.modify(word, |n| n + 1)?;
            }
            Ok(())
        });
        assert_eq!(runs, 2, "{design:?}");
        let total = stm.atomically(|tx| sum(tx, &words));
        assert_eq!(total, (1..=WORDS as u64).sum::<u64>(), "{design:?}");
    }
}

#[test]
fn reading_one_location_again_and_again_needs_no_new_entries() {
    for design in DesignKind::ALL {
        let stm = small(design);
        let word = TVar::new(3u64);
        let mut runs = 0;
        let total = stm.atomically(|tx| {
            count_run(&mut runs, 1, "re-reads of one location");
            (0..100 * LIMIT)
                .map(|_| tx.read(&word))
                .sum::<Result<u64, _>>()
        });
        assert_eq!(total, 3 * 100 * LIMIT as u64);
        assert_eq!(stm.stats().total.total_aborts(), 0, "{design:?}");
    }
}

/// More words than the limit, guarded by fewer records than the limit (16 here): the
/// compacted read set holds each record once, so the transaction fits (as a
/// 20-million-word read of the default engine fits its 2^20 records).
#[test]
fn more_words_than_the_limit_fit_when_they_share_records() {
    for design in DesignKind::ALL {
        let stm = Stm::new(
            Config::default()
                .with_design(design)
                .with_max_set_entries(LIMIT)
                .with_orec_bits(4),
        );
        let words = words(WORDS);
        let mut runs = 0;
        let total = stm.atomically(|tx| {
            count_run(&mut runs, 1, "words sharing 16 records");
            sum(tx, &words)
        });
        assert_eq!(total, (0..WORDS as u64).sum::<u64>());
    }
}

/// An irrevocable transaction (here one that writes output) runs exactly once, however
/// much it reads and writes.
#[test]
fn an_irrevocable_transaction_never_runs_again_for_its_size() {
    for design in DesignKind::ALL {
        let stm = small(design);
        let words = words(WORDS);
        let mut runs = 0;
        stm.transaction().irrevocable().run(|tx| {
            count_run(&mut runs, 1, "an irrevocable transaction past the limit");
            let total = sum(tx, &words)?;
            for word in &words {
                tx.modify(word, |n| n + total)?;
            }
            Ok(())
        });
        // Made irrevocable on the way (as output in Lua does): what follows the
        // request happens once.
        let mut outputs = 0;
        stm.atomically(|tx| {
            tx.read(&words[0])?;
            tx.become_irrevocable()?;
            count_run(&mut outputs, 1, "the output of an attempt made irrevocable");
            sum(tx, &words)?;
            for word in &words {
                tx.modify(word, |n| n + 1)?;
            }
            Ok(())
        });
        assert_eq!(stm.stats().total.aborts_for(AbortReason::Capacity), 0);
    }
}

/// Two threads under every design and contention manager: transfers between a few
/// accounts, and audits too large for the sets. Half of the audits ask to be
/// irrevocable and then "print" (count an effect outside the engine), the others get
/// there by the fallback. The total never changes, every audit sees it, and every
/// effect happens exactly once.
#[test]
fn audits_past_the_limit_beside_transfers_keep_the_total_and_print_once() {
    const ACCOUNTS: usize = 4;
    const ROUNDS: u64 = 60;
    for (design, manager) in all_configs() {
        within(
            Duration::from_secs(120),
            &format!("{design:?} {manager}"),
            move || {
                let stm = Stm::new(config(design, manager).with_max_set_entries(LIMIT));
                let accounts: Arc<Vec<TVar<u64>>> =
                    Arc::new((0..ACCOUNTS).map(|_| TVar::new(100)).collect());
                let padding = Arc::new(words(2 * LIMIT));
                let printed = Arc::new(AtomicU64::new(0));
                let threads: Vec<_> = (0..2u64)
                    .map(|id| {
                        let (stm, accounts, padding, printed) = (
                            stm.clone(),
                            accounts.clone(),
                            padding.clone(),
                            printed.clone(),
                        );
                        std::thread::spawn(move || {
                            for round in 0..ROUNDS {
                                let from = ((id + round) % ACCOUNTS as u64) as usize;
                                let to = (from + 1) % ACCOUNTS;
                                stm.atomically(|tx| {
                                    tx.modify(&accounts[from], |b| b - 1)?;
                                    tx.modify(&accounts[to], |b| b + 1)
                                });
                                if round % 4 != id {
                                    continue;
                                }
                                let print = round % 8 < 4;
                                let mut effects = 0;
                                stm.atomically(|tx| {
                                    if print {
                                        tx.become_irrevocable()?;
                                        count_run(&mut effects, 1, "a printing audit");
                                        printed.fetch_add(1, Ordering::SeqCst);
                                    }
                                    let total = sum(tx, &accounts)?;
                                    assert_eq!(total, 100 * ACCOUNTS as u64);
                                    sum(tx, &padding)?;
                                    tx.modify(&accounts[to], |b| b + 1)?;
                                    tx.modify(&accounts[from], |b| b - 1)
                                });
                            }
                        })
                    })
                    .collect();
                threads.into_iter().for_each(|t| t.join().unwrap());
                let total = stm.atomically(|tx| sum(tx, &accounts));
                assert_eq!(total, 100 * ACCOUNTS as u64);
                let expected: u64 = (0..2u64)
                    .map(|id| {
                        (0..ROUNDS)
                            .filter(|round| round % 4 == id && round % 8 < 4)
                            .count() as u64
                    })
                    .sum();
                assert_eq!(printed.load(Ordering::SeqCst), expected);
            },
        );
    }
}

/// A transaction that outgrew the sets and found nothing to do `retry`s in its
/// fallback attempt: it waits (an attempt the engine made irrevocable has done
/// nothing that cannot be undone), and takes the item once the producer commits it.
#[test]
fn a_fallback_attempt_may_retry() {
    for design in DesignKind::ALL {
        within(Duration::from_secs(60), &format!("{design:?}"), move || {
            let stm = small(design);
            let items = Arc::new(TVar::new(0u64));
            let padding = words(WORDS);
            let (waiting, wait_seen) = std::sync::mpsc::channel();
            let producer = {
                let (stm, items) = (stm.clone(), items.clone());
                std::thread::spawn(move || {
                    wait_seen.recv().unwrap();
                    stm.atomically(|tx| tx.modify(&items, |n| n + 1));
                })
            };
            let mut fallbacks = 0;
            let taken = stm.atomically(|tx| {
                sum(tx, &padding)?;
                let n = tx.read(&items)?;
                if n == 0 {
                    assert!(tx.is_fallback_irrevocable(), "only the fallback retries");
                    fallbacks += 1;
                    if fallbacks == 1 {
                        waiting.send(()).unwrap();
                    }
                    return tx.retry();
                }
                tx.write(&items, n - 1).map(|()| n)
            });
            producer.join().unwrap();
            assert_eq!(taken, 1);
            assert!(fallbacks >= 1);
            assert_eq!(stm.atomically(|tx| tx.read(&items)), 0);
        });
    }
}
