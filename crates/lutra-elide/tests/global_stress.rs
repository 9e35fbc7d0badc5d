//! Correctness of the elided lock under real contention, with every backend this
//! machine has (STM, the fake hardware with injected aborts, RTM when present), many
//! more threads than cores, and the plain lock: a bank whose total never changes.
//!
//! Each thread runs a loop of steps: most steps transfer between two random accounts,
//! some audit every account inside the transaction (a torn snapshot fails the test),
//! a few require the lock (forcing fallbacks beside speculative transactions). Threads
//! register and unregister at different times (most start together, a quarter late), so
//! the single-thread shortcut switches on and off. Beside them, plain engine transactions read the total (on the software
//! backends, which share the engine's records), checking that a fallback never lets a
//! concurrent reader see torn data.

use lutra_elide::global::{
    Backend, FallbackCause, GilConfig, GlobalLock, LengthPolicy, RandomAborts, Step,
};
use lutra_stm::{Stm, TVar};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const ACCOUNTS: usize = 24;
const INITIAL: i64 = 1_000;
const THREADS: usize = 32;
const STEPS: u64 = 4_000;
/// Steps the early threads have done, all together, before the late ones register.
const LATE_AFTER_STEPS: u64 = 100;

fn backends() -> Vec<Backend> {
    let mut all = vec![Backend::stm(), Backend::fake(RandomAborts::new(10, 7))];
    // SAFETY: the accounts are accessed only inside this lock's sections while
    // they run (the engine readers below are skipped for this backend).
    if let Some(rtm) = unsafe { Backend::rtm() } {
        all.push(rtm);
    }
    all
}

#[derive(Clone)]
struct Walk {
    rng: u64,
    done: u64,
}

impl Walk {
    fn next(&mut self, below: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % below
    }
}

fn bank(gil: &GlobalLock, readers: bool) {
    let accounts: Vec<TVar<i64>> = (0..ACCOUNTS).map(|_| TVar::new(INITIAL)).collect();
    let expected = INITIAL * ACCOUNTS as i64;
    let stop = AtomicBool::new(false);
    let start = Barrier::new(THREADS - THREADS / 4);
    // Steps done so far: a late thread registers once the others have begun (a
    // handshake on this count, not a sleep).
    let progress = AtomicU64::new(0);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|index| {
                let (gil, accounts, start, progress) = (gil, &accounts, &start, &progress);
                scope.spawn(move || {
                    let late = index % 4 == 3;
                    if late {
                        while progress.load(Ordering::Relaxed) < LATE_AFTER_STEPS {
                            std::thread::yield_now();
                        }
                    }
                    let mut me = gil.register().unwrap();
                    if !late {
                        start.wait();
                    }
                    let walk = Walk {
                        rng: 0x9e37_79b9_7f4a_7c15 ^ (index as u64 + 1),
                        done: 0,
                    };
                    me.run_steps(1, walk, |section, walk| {
                        let kind = walk.next(100);
                        if kind < 5 {
                            let total = accounts
                                .iter()
                                .map(|account| section.read(account))
                                .sum::<Result<i64, _>>()?;
                            assert_eq!(total, expected, "an audit saw a torn total");
                        } else {
                            if kind == 5 {
                                section.require_lock()?;
                            }
                            let from = walk.next(ACCOUNTS as u64) as usize;
                            let to = walk.next(ACCOUNTS as u64) as usize;
                            let amount = walk.next(50) as i64;
                            section.modify(&accounts[from], |balance| balance - amount)?;
                            section.modify(&accounts[to], |balance| balance + amount)?;
                        }
                        walk.done += 1;
                        progress.fetch_add(1, Ordering::Relaxed);
                        Ok(if walk.done == STEPS {
                            Step::Done(())
                        } else if kind % 3 == 0 {
                            Step::YieldAt(2)
                        } else {
                            Step::Continue
                        })
                    });
                })
            })
            .collect();
        if readers {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let total = gil.stm().atomically(|tx| {
                        accounts
                            .iter()
                            .map(|account| tx.read(account))
                            .sum::<Result<i64, _>>()
                    });
                    assert_eq!(total, expected, "a reader saw a torn total");
                }
            });
        }
        for worker in workers {
            worker.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    let mut me = gil.register().unwrap();
    let total = me.run(9, |section| {
        accounts
            .iter()
            .map(|account| section.read(account))
            .sum::<Result<i64, _>>()
    });
    assert_eq!(total, expected);
    let stats = gil.stats();
    let sites = stats.by_site[&1].steps + stats.by_site.get(&2).map_or(0, |site| site.steps);
    assert_eq!(sites, STEPS * THREADS as u64, "{:?}", stats.total);
    assert_eq!(
        stats.total.transactions,
        stats.total.speculative_commits + stats.total.fallbacks(),
        "{}",
        stats.total
    );
}

#[test]
fn conservation_with_every_backend_and_length() {
    for backend in backends() {
        for length in [
            LengthPolicy::DYNAMIC,
            LengthPolicy::Fixed(1),
            LengthPolicy::Fixed(16),
        ] {
            let config = GilConfig::default().with_length(length);
            let readers = backend.name() != "rtm";
            let gil = GlobalLock::with_backend(&Stm::default(), config, backend.clone());
            bank(&gil, readers);
            let total = gil.stats().total;
            assert!(
                total.fallbacks_for(FallbackCause::Persistent) > 0,
                "require_lock forced fallbacks ({}, {}): {total}",
                backend.name(),
                length.label()
            );
        }
    }
}

#[test]
fn conservation_with_the_plain_lock() {
    let gil = GlobalLock::new(
        &Stm::default(),
        GilConfig::default()
            .with_elision(false)
            .with_length(LengthPolicy::Fixed(16)),
    );
    bank(&gil, true);
    let total = gil.stats().total;
    assert_eq!(total.fallbacks(), total.transactions, "{total}");
    assert_eq!(total.total_aborts(), 0, "{total}");
}
