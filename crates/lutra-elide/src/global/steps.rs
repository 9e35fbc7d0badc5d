//! Long-running work under the elided lock as a loop of steps separated by yield
//! points (seed 000, Section IV.B: yield points at bytecode boundaries; Fig. 2's
//! `transaction_yield`).
//!
//! A software transaction cannot roll back arbitrary code, so the lock owns the loop
//! and its state: the caller gives an initial state and a step function; a
//! transaction runs steps until it has passed `length` yield points (its site's
//! length), then commits and the next transaction begins at the yield point it
//! ended at.
//!
//! # Protocol
//! 1. A transaction begins at a site with a checkpoint of the loop state (the state
//!    as of the last commit).
//! 2. Each attempt clones the checkpoint and runs steps on the clone. After each step
//!    comes a yield point: at the site of the call (`Step::Continue`) or another one
//!    (`Step::YieldAt`). The transaction ends there once it has run `length` steps, or
//!    at once on `Step::Done`.
//! 3. On abort the clone is dropped and the next attempt starts again from the
//!    checkpoint, re-running the steps since the last commit.
//! 4. On commit the clone becomes the checkpoint; after `Step::Done` its result is
//!    returned.
//!
//! # Invariants
//! - A step's effects on the loop state and on `TVar`s are kept only when the
//!   transaction that ran it commits; code with other effects must call
//!   [`Section::require_lock`] first.

use crate::global::begin::Plan;
use crate::global::gil::LiveThread;
use crate::global::section::Section;
use lutra_stm::Abort;

/// What a step asks for next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step<R> {
    /// Run the next step; the yield point between them is the run's own site.
    Continue,
    /// Run the next step; the yield point between them is this site (for loops that
    /// pass several yield points, like an interpreter's bytecodes, each with its own
    /// length).
    YieldAt(u32),
    /// The loop is over: commit and return this result.
    Done(R),
}

/// How a committed transaction ended.
enum Ended<R> {
    /// At a yield point of this site, after `length` steps.
    Yield(u32),
    /// With the loop's result.
    Done(R),
}

impl LiveThread {
    /// Runs a loop of steps under the lock: `step(section, state)` is called until it
    /// returns [`Step::Done`], whose result is returned. Transactions begin at yield
    /// points and each covers its site's length in steps; `site` is the yield point of
    /// [`Step::Continue`] and the site of the first transaction.
    ///
    /// `step` may run several times for one step (after aborts) but its effects are
    /// kept once: it must keep every effect in `state` and in `TVar`s (see the module
    /// protocol). The state is cloned at every attempt: keep it small.
    ///
    /// # Panics
    /// If `step` panics (the running attempt is rolled back, the lock released).
    ///
    /// ```
    /// use lutra_elide::global::{GilConfig, GlobalLock, LengthPolicy, Step};
    /// use lutra_stm::{Stm, TVar};
    /// let gil = GlobalLock::new(&Stm::default(), GilConfig::default().with_length(LengthPolicy::Fixed(16)));
    /// let items: Vec<TVar<u64>> = (1..=100).map(TVar::new).collect();
    /// let mut me = gil.register().unwrap();
    /// // An iterator: the state is (position, running sum); one element per step.
    /// let sum = me.run_steps(7, (0usize, 0u64), |section, (at, sum)| {
    ///     *sum += section.read(&items[*at])?;
    ///     *at += 1;
    ///     Ok(if *at == items.len() { Step::Done(*sum) } else { Step::Continue })
    /// });
    /// assert_eq!(sum, 5050);
    /// ```
    pub fn run_steps<S: Clone, R>(
        &mut self,
        site: u32,
        state: S,
        mut step: impl FnMut(&mut Section<'_>, &mut S) -> Result<Step<R>, Abort>,
    ) -> R {
        let mut checkpoint = state;
        let mut at = site;
        loop {
            let mut committed: Option<(S, Ended<R>)> = None;
            let mut steps = |section: &mut Section<'_>, plan: &Plan<'_>| {
                committed = None;
                let mut work = checkpoint.clone();
                loop {
                    let next = match step(section, &mut work)? {
                        Step::Done(result) => {
                            section.last_step();
                            committed = Some((work, Ended::Done(result)));
                            return Ok(());
                        }
                        Step::Continue => site,
                        Step::YieldAt(next) => next,
                    };
                    if section.steps() + 1 >= plan.length || plan.others_arrived() {
                        section.last_step();
                        committed = Some((work, Ended::Yield(next)));
                        return Ok(());
                    }
                    section.yield_point()?;
                }
            };
            self.transaction(at, &mut steps);
            let (state, ended) = committed.expect("a committed transaction ran its steps");
            checkpoint = state;
            match ended {
                Ended::Done(result) => return result,
                Ended::Yield(next) => at = next,
            }
        }
    }

    /// Runs `body` as one critical section (a loop of one step) at `site` and returns
    /// its result. `body` may run several times; its effects are kept once.
    ///
    /// # Panics
    /// If `body` panics.
    ///
    /// ```
    /// use lutra_elide::global::{GilConfig, GlobalLock};
    /// use lutra_stm::{Stm, TVar};
    /// let gil = GlobalLock::new(&Stm::default(), GilConfig::default());
    /// let (from, to) = (TVar::new(10i64), TVar::new(0i64));
    /// let mut me = gil.register().unwrap();
    /// me.run(1, |section| {
    ///     section.modify(&from, |n| n - 3)?;
    ///     section.modify(&to, |n| n + 3)
    /// });
    /// assert_eq!(me.run(1, |section| Ok(section.read(&from)? + section.read(&to)?)), 10);
    /// ```
    pub fn run<R>(
        &mut self,
        site: u32,
        mut body: impl FnMut(&mut Section<'_>) -> Result<R, Abort>,
    ) -> R {
        self.run_steps(site, (), |section, ()| body(section).map(Step::Done))
    }
}
