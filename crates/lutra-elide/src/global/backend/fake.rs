//! A deterministic stand-in for hardware transactions: software transactions whose
//! aborts a [`Script`] injects, each with the class the script names. The policy
//! (retry limits, fallbacks, length adaptation) is then exercised by exact abort
//! sequences, as no machine here has hardware TM.
//!
//! # Protocol
//! 1. At every yield point inside a speculative attempt, the script may abort it
//!    ([`Script::at_yield_point`]); so does a taken lock, as on the STM backend.
//! 2. Before the commit, the script may abort it ([`Script::at_commit`]).
//! 3. Real conflicts of the software transaction abort it too, classified as on the
//!    STM backend.
//!
//! # Invariants
//! - The script is asked only for speculative attempts (never under the lock), in the
//!   order they reach the points above; with one running thread the sequence is
//!   exactly reproducible.

use crate::global::backend::{Aborted, Attempt, Body, Speculation, stm};
use crate::global::policy::AbortClass;
use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

/// Decides which speculative attempts of a [`Backend::fake`](crate::global::Backend::fake)
/// lock abort, and how.
pub trait Script: Send {
    /// Called at each yield point inside a speculative attempt begun at `site`, after
    /// its `steps`-th step; `Some` aborts the attempt there with that class.
    fn at_yield_point(&mut self, site: u32, steps: u32) -> Option<AbortClass> {
        let _ = (site, steps);
        None
    }

    /// Called when a speculative attempt of `steps` steps begun at `site` is about to
    /// commit; `Some` aborts it with that class.
    fn at_commit(&mut self, site: u32, steps: u32) -> Option<AbortClass>;
}

/// Replays a fixed sequence of outcomes, one per speculative attempt reaching its
/// commit (`None` commits, `Some(class)` aborts); once the sequence is used up, every
/// attempt commits.
///
/// ```
/// use lutra_elide::global::{AbortClass, Replay, Script};
/// let mut script = Replay::new([Some(AbortClass::Transient), None]);
/// assert_eq!(script.at_commit(0, 1), Some(AbortClass::Transient));
/// assert_eq!(script.at_commit(0, 1), None);
/// assert_eq!(script.remaining(), 0);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Replay(VecDeque<Option<AbortClass>>);

impl Replay {
    /// A script replaying `outcomes` in order.
    pub fn new(outcomes: impl IntoIterator<Item = Option<AbortClass>>) -> Self {
        Self(outcomes.into_iter().collect())
    }

    /// Outcomes not yet replayed.
    pub fn remaining(&self) -> usize {
        self.0.len()
    }
}

impl Script for Replay {
    fn at_commit(&mut self, _site: u32, _steps: u32) -> Option<AbortClass> {
        self.0.pop_front().flatten()
    }
}

/// Aborts every attempt that runs more than `steps` steps (at the yield point after
/// step `steps`), with `class`: a transaction that outgrows the hardware's buffers.
/// With `only_site`, other sites never abort.
#[derive(Clone, Copy, Debug)]
pub struct AbortBeyond {
    /// The most steps an attempt can run.
    pub steps: u32,
    /// The class of the aborts.
    pub class: AbortClass,
    /// The only site that aborts (`None`: every site).
    pub only_site: Option<u32>,
}

impl AbortBeyond {
    fn applies(&self, site: u32, steps: u32) -> Option<AbortClass> {
        let here = self.only_site.is_none_or(|only| only == site);
        (here && steps >= self.steps).then_some(self.class)
    }
}

impl Script for AbortBeyond {
    fn at_yield_point(&mut self, site: u32, steps: u32) -> Option<AbortClass> {
        self.applies(site, steps)
    }

    fn at_commit(&mut self, site: u32, steps: u32) -> Option<AbortClass> {
        self.applies(site, steps.saturating_sub(1))
    }
}

/// Aborts each speculative attempt before its commit with probability
/// `percent` / 100, cycling through the classes; a seeded generator makes a
/// single-threaded run reproducible.
#[derive(Clone, Debug)]
pub struct RandomAborts {
    percent: u64,
    state: u64,
    next_class: usize,
}

impl RandomAborts {
    /// Aborts `percent`% of the attempts (0 to 100), drawn from `seed`.
    pub fn new(percent: u32, seed: u64) -> Self {
        Self {
            percent: u64::from(percent.min(100)),
            state: seed | 1,
            next_class: 0,
        }
    }

    fn draw(&mut self) -> u64 {
        // xorshift64: small, deterministic, good enough to spread aborts.
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state % 100
    }
}

impl Script for RandomAborts {
    fn at_commit(&mut self, _site: u32, _steps: u32) -> Option<AbortClass> {
        if self.draw() >= self.percent {
            return None;
        }
        let class = AbortClass::ALL[self.next_class % AbortClass::COUNT];
        self.next_class += 1;
        Some(class)
    }
}

/// The fake hardware backend.
pub(crate) struct FakeHardware {
    script: Mutex<Box<dyn Script>>,
}

impl FakeHardware {
    pub(crate) fn new(script: impl Script + 'static) -> Self {
        Self {
            script: Mutex::new(Box::new(script)),
        }
    }

    fn script(&self) -> std::sync::MutexGuard<'_, Box<dyn Script>> {
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Speculation for FakeHardware {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn speculate(&self, attempt: Attempt<'_>, body: &mut Body<'_>) -> Result<(), Aborted> {
        stm::run_attempt(attempt, false, self, body)
    }

    fn abort_at_yield_point(&self, site: u32, steps: u32) -> Option<AbortClass> {
        self.script().at_yield_point(site, steps)
    }

    fn abort_at_commit(&self, site: u32, steps: u32) -> Option<AbortClass> {
        self.script().at_commit(site, steps)
    }
}
