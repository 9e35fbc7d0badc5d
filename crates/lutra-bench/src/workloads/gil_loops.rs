//! Seed 000's loops on the elided global lock (`lutra_elide::global`): each thread
//! loops over its own data in small steps under one global lock.
//!
//! - `while`: a while loop; each step increments the thread's counter (the paper's
//!   While: little work between yield points, so transaction begin and end weigh).
//! - `iterator`: an iterator calling a block; each step reads the position, reads an
//!   element of the thread's array, adds it to an accumulator and advances (the
//!   paper's Iterator: a method call per step, more work between yield points).
//! - `conflict`: `while`, plus an increment of one shared counter every
//!   [`HOT_EVERY`] steps: real conflicts, under which long fixed lengths collapse
//!   into fallbacks.
//!
//! One measured operation is a loop of [`CHUNK`] steps ([`chunk`] under the lock,
//! [`plain_chunk`] on plain memory).
//!
//! # Invariants
//! - Every step counted leaves its trace exactly once: the threads' counters (or
//!   positions) sum to the steps, and the shared counter is the steps ÷
//!   [`HOT_EVERY`] ([`Owned::check_conservation`] panics otherwise).

use lutra_elide::global::{LiveThread, Section, Step};
use lutra_stm::{Abort, Stm, TVar};
use std::hint::black_box;
use std::sync::{Arc, Mutex, PoisonError};

/// Steps per measured operation (one loop under the lock).
pub const CHUNK: u64 = 1024;
/// The conflict workload touches the shared counter every this many steps.
pub const HOT_EVERY: u64 = 256;
/// Elements of each thread's array (iterator).
const ITEMS: usize = 64;
/// The yield-point site of the loops' back edge.
pub const SITE: u32 = 1;

/// Which loop a thread runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GilLoop {
    /// The while loop.
    While,
    /// The iterator.
    Iterator,
    /// The while loop with a shared counter.
    Conflict,
}

impl GilLoop {
    /// The name on command lines and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::While => "while",
            Self::Iterator => "iterator",
            Self::Conflict => "conflict",
        }
    }
}

/// One thread's data.
#[derive(Debug)]
pub struct Own {
    counter: TVar<u64>,
    position: TVar<u64>,
    sum: TVar<u64>,
    items: Vec<TVar<u64>>,
}

impl Own {
    fn new() -> Self {
        Self {
            counter: TVar::new(0),
            position: TVar::new(0),
            sum: TVar::new(0),
            items: (0..ITEMS as u64).map(TVar::new).collect(),
        }
    }
}

/// Every thread's data of one run, and the shared counter: kept so that the run's
/// conservation can be checked after it.
#[derive(Debug, Default)]
pub struct Owned {
    owned: Mutex<Vec<Arc<Own>>>,
    hot: TVar<u64>,
}

impl Owned {
    /// A new thread's data (call once per thread, in its init).
    pub fn add(&self) -> Arc<Own> {
        let own = Arc::new(Own::new());
        self.owned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(own.clone());
        own
    }

    /// The counter the conflict loop shares.
    pub fn hot(&self) -> &TVar<u64> {
        &self.hot
    }

    /// Checks that every one of `steps` steps of `workload` left its trace exactly
    /// once.
    ///
    /// # Panics
    /// A step lost or repeated.
    pub fn check_conservation(&self, workload: GilLoop, stm: &Stm, steps: u64) {
        let owned = self.owned.lock().unwrap_or_else(PoisonError::into_inner);
        let (traces, shared) = stm.atomically(|tx| {
            let mut traces = 0;
            for own in owned.iter() {
                traces += match workload {
                    GilLoop::Iterator => tx.read(&own.position)?,
                    GilLoop::While | GilLoop::Conflict => tx.read(&own.counter)?,
                };
            }
            Ok((traces, tx.read(&self.hot)?))
        });
        assert_eq!(traces, steps, "{}: steps lost or repeated", workload.name());
        if workload == GilLoop::Conflict {
            assert_eq!(shared, steps / HOT_EVERY, "conflict: shared counter");
        }
    }
}

/// One step of `workload` on `own`; `done` counts the steps of the loop so far.
fn step(
    workload: GilLoop,
    section: &mut Section<'_>,
    own: &Own,
    hot: &TVar<u64>,
    done: u64,
) -> Result<(), Abort> {
    match workload {
        GilLoop::While => section.modify(&own.counter, |i| i + 1),
        GilLoop::Iterator => {
            let at = section.read(&own.position)?;
            let item = section.read(&own.items[at as usize % ITEMS])?;
            section.modify(&own.sum, |sum| sum + item)?;
            section.write(&own.position, at + 1)
        }
        GilLoop::Conflict => {
            if done.is_multiple_of(HOT_EVERY) {
                section.modify(hot, |n| n + 1)?;
            }
            section.modify(&own.counter, |i| i + 1)
        }
    }
}

/// One measured operation: a loop of [`CHUNK`] steps under the lock, at [`SITE`].
pub fn chunk(me: &mut LiveThread, workload: GilLoop, own: &Own, hot: &TVar<u64>) {
    me.run_steps(SITE, 0u64, |section, done| {
        step(workload, section, own, hot, *done)?;
        *done += 1;
        Ok(if *done == CHUNK {
            Step::Done(())
        } else {
            Step::Continue
        })
    });
}

/// The same loop's data on plain memory.
#[derive(Debug)]
pub struct PlainOwn {
    counter: u64,
    position: u64,
    sum: u64,
    hot: u64,
    items: [u64; ITEMS],
}

impl Default for PlainOwn {
    fn default() -> Self {
        Self {
            counter: 0,
            position: 0,
            sum: 0,
            hot: 0,
            items: std::array::from_fn(|index| index as u64),
        }
    }
}

/// One measured operation on plain memory: [`CHUNK`] steps, no lock.
pub fn plain_chunk(workload: GilLoop, own: &mut PlainOwn) {
    for done in 0..CHUNK {
        let own = black_box(&mut *own);
        match workload {
            GilLoop::While => own.counter += 1,
            GilLoop::Iterator => {
                own.sum += own.items[own.position as usize % ITEMS];
                own.position += 1;
            }
            GilLoop::Conflict => {
                if done.is_multiple_of(HOT_EVERY) {
                    own.hot += 1;
                }
                own.counter += 1;
            }
        }
    }
}
