//! Software transactions of the engine: the default speculation, and the fallback
//! under the lock for every backend.
//!
//! # Protocol (one attempt, [`run_attempt`])
//! 1. Begin: a fallback (`locked`) or a first attempt begins a fresh transaction
//!    (irrevocable when locked: it waits for the commit gate and drains the committing
//!    transactions); a retry first gives way as the engine's own loop does (its
//!    contention manager's delay, and a wait for a gate closed by another), then
//!    restarts, keeping its age.
//! 2. Run the steps with a [`Section`] over the attempt. A speculative attempt checks
//!    the lock at every yield point inside it; the backend may inject aborts there and
//!    before the commit.
//! 3. Commit. On abort roll back and classify: the class the section recorded, else
//!    [`AbortClass::of_stm`] with the lock's state after the abort (Fig. 1, line 21).
//!
//! # Invariants
//! - Exclusion between the lock holder and speculative updaters is the engine's commit
//!   gate, which the holder's irrevocable transaction closes: a speculative updater
//!   cannot commit while the lock is held; a speculative reader commits on a snapshot
//!   that is consistent (the holder's writes stay buffered until it commits). The
//!   yield-point checks only make speculative attempts give up sooner.
//! - An attempt left active by a panic in a step is rolled back at the next attempt.

use crate::global::backend::{Aborted, Attempt, Body, Speculation};
use crate::global::policy::AbortClass;
use crate::global::section::Section;
use lutra_stm::{AbortReason, TxOptions};

/// The default speculation: a plain software transaction.
pub(crate) struct StmSpeculation;

impl Speculation for StmSpeculation {
    fn name(&self) -> &'static str {
        "stm"
    }

    fn speculate(&self, attempt: Attempt<'_>, body: &mut Body<'_>) -> Result<(), Aborted> {
        run_attempt(attempt, false, self, body)
    }
}

/// Runs one software attempt (see the module protocol): speculative, or under the lock
/// (`locked`: irrevocable, which cannot abort).
pub(crate) fn run_attempt(
    attempt: Attempt<'_>,
    locked: bool,
    speculation: &dyn Speculation,
    body: &mut Body<'_>,
) -> Result<(), Aborted> {
    let Attempt {
        desc,
        lock,
        site,
        previous,
    } = attempt;
    if desc.is_active() {
        desc.rollback(AbortReason::Panic);
    }
    match previous {
        Some(reason) if !locked => {
            desc.wait_before_restart(reason);
            desc.restart();
        }
        _ => desc.begin(TxOptions {
            site,
            irrevocable: locked,
            ..TxOptions::default()
        }),
    }
    let (outcome, flag) = {
        let mut section = Section::stm(desc.transaction(), lock, speculation, site, locked);
        let mut outcome = body(&mut section);
        if outcome.is_ok()
            && !locked
            && let Some(class) = speculation.abort_at_commit(site, section.steps())
        {
            outcome = Err(section.doom(class));
        }
        (outcome, section.flag())
    };
    let outcome = match (outcome, desc.doomed()) {
        (_, Some(reason)) => Err(reason),
        (Ok(()), None) => desc.commit().map_err(|abort| abort.reason()),
        (Err(abort), None) => Err(abort.reason()),
    };
    outcome.map_err(|reason| {
        desc.rollback(reason);
        Aborted {
            class: flag.unwrap_or_else(|| AbortClass::of_stm(reason, lock.is_held())),
            reason: Some(reason),
        }
    })
}
