//! Boxed `TVar` values (a custom type, `String`, `Vec`, `Option`, tuples) under
//! concurrent updates: 32 threads on 2 cores replace, grow and shrink shared values,
//! write the same variable twice in one attempt, abort explicitly after writing, and
//! undo writes in retried `or_else` branches, while conflicts abort attempts.
//!
//! Every value carries a canary that is checked when it is cloned or dropped (a value
//! read after it was released, or released twice, fails the test) and is counted when
//! constructed and when dropped. Once every thread, variable and the engine are gone,
//! constructed == dropped: no value leaked, none was dropped twice. The committed
//! contents are checked too: a counter updated by every commit matches the number of
//! commits.

mod common;

use common::{engine, within};
use lutra_stm::{DesignKind, TVar};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

static CONSTRUCTED: AtomicUsize = AtomicUsize::new(0);
static DROPPED: AtomicUsize = AtomicUsize::new(0);
const CANARY: u64 = 0x5EED_CAFE_F00D_BEEF;

#[derive(Debug)]
struct Tracked {
    canary: u64,
    value: i64,
}

impl Tracked {
    fn new(value: i64) -> Self {
        CONSTRUCTED.fetch_add(1, Ordering::SeqCst);
        Self {
            canary: CANARY,
            value,
        }
    }

    fn value(&self) -> i64 {
        assert_eq!(self.canary, CANARY, "read a released value");
        self.value
    }
}

impl Clone for Tracked {
    fn clone(&self) -> Self {
        Tracked::new(self.value())
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        assert_eq!(self.canary, CANARY, "a value was dropped twice");
        self.canary = 0;
        DROPPED.fetch_add(1, Ordering::SeqCst);
    }
}

lutra_stm::boxed_transactable!(Tracked);

struct World {
    single: TVar<Tracked>,
    list: TVar<Vec<Tracked>>,
    text: TVar<String>,
    maybe: TVar<Option<Tracked>>,
    pair: TVar<(Tracked, String)>,
    commits: TVar<Tracked>,
    /// Long to clone: a reader preempted while cloning it gives an early release time
    /// to strike.
    big: TVar<Vec<Tracked>>,
}

impl World {
    fn new() -> Self {
        Self {
            single: TVar::new(Tracked::new(0)),
            list: TVar::new(Vec::new()),
            text: TVar::new(String::new()),
            maybe: TVar::new(None),
            pair: TVar::new((Tracked::new(0), String::from("pair"))),
            commits: TVar::new(Tracked::new(0)),
            big: TVar::new(big_list(0)),
        }
    }
}

fn big_list(value: i64) -> Vec<Tracked> {
    (0..BIG).map(|_| Tracked::new(value)).collect()
}

const BIG: usize = 400;
const THREADS: usize = 32;
const ROUNDS: usize = 80;

fn churn(design: DesignKind, manager: &'static str) {
    let stm = engine(design, manager);
    let world = Arc::new(World::new());
    let start = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|id| {
            let (stm, world, start) = (stm.clone(), world.clone(), start.clone());
            std::thread::spawn(move || {
                let mut rng = fastrand::Rng::with_seed(id as u64);
                start.wait();
                for _ in 0..ROUNDS {
                    let action = rng.u8(0..7);
                    let n = rng.i64(-50..50);
                    stm.atomically(|tx| {
                        tx.modify(&world.commits, |c| Tracked::new(c.value() + 1))?;
                        match action {
                            0 => {
                                // Two writes of one variable: the first value is never
                                // published.
                                tx.write(&world.single, Tracked::new(n))?;
                                tx.write(&world.single, Tracked::new(n + 1))?;
                            }
                            1 => tx.modify(&world.list, |mut list| {
                                if list.len() >= 6 {
                                    list.remove(0);
                                } else {
                                    list.push(Tracked::new(n));
                                }
                                list
                            })?,
                            2 => tx.modify(&world.text, |mut text| {
                                if text.len() > 40 {
                                    text.clear();
                                }
                                text.push_str(&n.to_string());
                                text
                            })?,
                            3 => {
                                let old = tx.read(&world.maybe)?;
                                let new = match old {
                                    Some(t) if t.value() % 2 == 0 => None,
                                    _ => Some(Tracked::new(n)),
                                };
                                tx.write(&world.maybe, new)?;
                            }
                            4 => {
                                // A branch that writes boxed values, then retries.
                                tx.or_else(
                                    |tx| {
                                        tx.write(&world.pair, (Tracked::new(n), "undone".into()))?;
                                        tx.write(&world.single, Tracked::new(-1))?;
                                        tx.read(&world.text)?;
                                        tx.retry()
                                    },
                                    |tx| {
                                        let (t, s) = tx.read(&world.pair)?;
                                        assert_ne!(
                                            s, "undone",
                                            "a retried branch's write is visible"
                                        );
                                        tx.write(&world.pair, (Tracked::new(t.value() + 1), s))
                                    },
                                )?;
                            }
                            5 => {
                                let big = tx.read(&world.big)?;
                                let value = big[0].value();
                                assert!(big.iter().all(|t| t.value() == value), "a torn list");
                                tx.write(&world.big, big_list(value + 1))?;
                            }
                            _ => {
                                // Write, then abort the first attempt.
                                tx.write(&world.single, Tracked::new(n))?;
                                tx.modify(&world.list, |mut list| {
                                    list.push(Tracked::new(n));
                                    list
                                })?;
                                if tx.aborts_so_far() == 0 {
                                    return tx.abort();
                                }
                                tx.modify(&world.list, |mut list| {
                                    list.pop();
                                    list
                                })?;
                            }
                        }
                        // Read-only clones of everything.
                        let list = tx.read(&world.list)?;
                        list.iter().for_each(|t| {
                            t.value();
                        });
                        tx.read(&world.pair)?.0.value();
                        if id % 2 == 0 {
                            tx.read(&world.big)?.iter().for_each(|t| {
                                t.value();
                            });
                        }
                        Ok(())
                    });
                }
            })
        })
        .collect();
    threads
        .into_iter()
        .for_each(|t| t.join().expect("a churn thread failed"));
    let checker = {
        let (stm, world) = (stm.clone(), world.clone());
        std::thread::spawn(move || stm.atomically(|tx| Ok(tx.read(&world.commits)?.value())))
    };
    assert_eq!(
        checker.join().unwrap(),
        (THREADS * ROUNDS) as i64,
        "{design:?}/{manager}: commits were lost"
    );
    let stats = stm.stats().total;
    assert!(
        stats.total_aborts() > 0,
        "no attempt aborted: nothing was undone"
    );
    drop(stm);
    drop(world);
}

#[test]
fn boxed_values_are_neither_leaked_nor_freed_early() {
    within(Duration::from_secs(100), "boxed values", || {
        for design in DesignKind::ALL {
            for manager in ["backoff", "timestamp", "aggressive"] {
                churn(design, manager);
            }
        }
    });
    let (constructed, dropped) = (
        CONSTRUCTED.load(Ordering::SeqCst),
        DROPPED.load(Ordering::SeqCst),
    );
    assert!(constructed > 10_000, "only {constructed} values were made");
    assert_eq!(
        constructed, dropped,
        "values leaked (or were dropped twice)"
    );
}
