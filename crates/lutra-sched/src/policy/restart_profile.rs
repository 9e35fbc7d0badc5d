//! Restart-profile scheduling (TxLinux, seed 003 Section 6): each task keeps a
//! transaction profile of exponential moving averages, from which the scheduler
//! derives a dynamic priority and decides to deschedule a task that is wasting work.
//!
//! # Profile (per agent: the task, or the thread outside tasks)
//! - `restarts`: EMA (β = 0.75) of the restarts per transaction, sampled at each commit
//!   with the transaction's abort count.
//! - `wasted`: EMA (β = 0.75) of the time wasted per attempt, sampled at each attempt
//!   end: the attempt's duration after a contention abort, 0 after a commit. (TxLinux
//!   averages backoff cycles; the engine reports each attempt's duration, timed when
//!   statistics are on.)
//!
//! # Rules
//! 1. Priority (TxLinux's `effective_prio`: high restart rates are penalised):
//!    `priority = −min(10, round(2 × restarts))`. It is fed to the engine's
//!    [`Priority`](lutra_stm::cm::Priority) contention manager through
//!    `start_priority` (fixed for the whole transaction, as os_prio requires), and
//!    announced to the scheduler with `set_priority`.
//! 2. Wasting: `wasted > switch cost` (TxLinux: average backoff above the cost of a
//!    context switch), or a restart spike: the current transaction has restarted at
//!    least twice and more than 3 × `restarts` (TxLinux: 3× its average). A wasting
//!    task announces `priority − 100` to the scheduler, so no switch picks it as a
//!    replacement.
//! 3. Descheduling (TxLinux does it at the timer tick; Lutra at the hooks, the only
//!    points where a task gives up its worker): a wasting task is descheduled with
//!    `switch_to_priority(min)` in favour of the first runnable task announcing at
//!    least `min`, so one that is not wasting; when none is runnable it goes on.
//!    - after an abort (`on_abort`), the task is inside a transaction: `min` is its own
//!      priority, so it is never descheduled in favour of a lower-priority task;
//!    - before a transaction's first attempt (`on_start`), it is not: `min` is its
//!      priority − 5 (TxLinux: a replacement within 5 priority levels).
//!
//! Large transactions are not rewarded here (TxLinux does): the engine's `Priority`
//! manager already prefers the larger transaction between equal priorities.
//!
//! # Invariants
//! - The hooks deschedule by calling the scheduler themselves and always answer
//!   `Proceed` (the engine's `SwitchAway` is LUTS's switch by transaction id, not by
//!   priority); each hook call switches at most once, so a wasting task with no
//!   suitable replacement goes on at once.
//! - A transaction's contention priority is read once, when its first attempt begins,
//!   and never changes during the transaction (os_prio's condition against livelock).

use super::agents::{AgentMap, current_agent};
use super::intensity::{End, ema};
use lutra_stm::{Decision, TxEvent, TxHooks};
use std::time::Duration;

/// Weight of the history in the profile's moving averages.
pub const BETA: f64 = 0.75;
/// Default cost of a task switch: wasting more per attempt, on average, makes a task
/// worth descheduling. (Two tasks yielding to each other on one worker switch in about
/// 0.45 µs on the 2-core development machine, release build; 1 µs leaves room for
/// the caches the switched-in task refills.)
pub const DEFAULT_SWITCH_COST: Duration = Duration::from_micros(1);
/// A transaction restarting more than this many times its task's average is a spike.
pub const RESTART_SPIKE: f64 = 3.0;
/// Fewest restarts of the current transaction that can make a spike.
pub const MIN_SPIKE_RESTARTS: u32 = 2;
/// Priority levels lost per average restart.
pub const PENALTY_PER_RESTART: f64 = 2.0;
/// Most priority levels a restart history can cost.
pub const MAX_PENALTY: i64 = 10;
/// Levels subtracted from the priority a wasting task announces to the scheduler.
pub const WASTING_PENALTY: i64 = 100;
/// How many levels below a task (outside a transaction) its replacement may be.
pub const REPLACEMENT_LEVELS: i64 = 5;

/// A task's transaction profile (see the module header).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Profile {
    /// Moving average of the restarts per committed transaction.
    pub restarts: f64,
    /// Moving average of the time wasted per attempt.
    pub wasted: Duration,
}

impl Profile {
    /// Rule 1: the dynamic priority, from 0 (no restarts) down to `-MAX_PENALTY`.
    pub fn priority(&self) -> i64 {
        let penalty = (PENALTY_PER_RESTART * self.restarts).round() as i64;
        -penalty.clamp(0, MAX_PENALTY)
    }

    /// Rule 2: whether the task is wasting work, its current transaction having
    /// restarted `aborts` times so far.
    pub fn is_wasting(&self, aborts: u32, switch_cost: Duration) -> bool {
        let spike =
            aborts >= MIN_SPIKE_RESTARTS && f64::from(aborts) > RESTART_SPIKE * self.restarts;
        self.wasted > switch_cost || spike
    }

    /// Updates the averages for an attempt's end (see the module header).
    fn record(&mut self, event: &TxEvent) {
        match End::of(event.reason) {
            End::Commit => {
                self.restarts = ema(self.restarts, f64::from(event.aborts), BETA);
                self.wasted = self.wasted.mul_f64(BETA);
            }
            End::Contention => {
                let wasted = ema(self.wasted.as_secs_f64(), event.elapsed.as_secs_f64(), BETA);
                self.wasted = Duration::from_secs_f64(wasted);
            }
            End::Other => {}
        }
    }
}

/// Hooks of the restart-profile policy (install with the `Priority` manager: see
/// [`Policy::configure`](super::Policy::configure)).
pub struct RestartProfile {
    profiles: AgentMap<Profile>,
    switch_cost: Duration,
}

impl Default for RestartProfile {
    fn default() -> Self {
        Self::new()
    }
}

impl RestartProfile {
    /// A policy with [`DEFAULT_SWITCH_COST`].
    pub fn new() -> Self {
        Self::with_switch_cost(DEFAULT_SWITCH_COST)
    }

    /// A policy that deems a task wasting once it wastes more than `switch_cost` per
    /// attempt on average.
    pub fn with_switch_cost(switch_cost: Duration) -> Self {
        Self {
            profiles: AgentMap::new(),
            switch_cost,
        }
    }

    /// The profile of the calling task (or thread).
    pub fn profile(&self) -> Profile {
        self.profiles.with(current_agent(), |profile| *profile)
    }

    /// Whether the calling task is wasting work, its current transaction having
    /// restarted `aborts` times.
    pub fn is_wasting(&self, aborts: u32) -> bool {
        self.profile().is_wasting(aborts, self.switch_cost)
    }

    /// Announces the calling task's scheduling priority (rules 1 and 2) and returns
    /// `(priority, wasting)`.
    fn announce(&self, profile: &Profile, aborts: u32) -> (i64, bool) {
        let priority = profile.priority();
        let wasting = profile.is_wasting(aborts, self.switch_cost);
        crate::set_priority(if wasting {
            priority - WASTING_PENALTY
        } else {
            priority
        });
        (priority, wasting)
    }
}

impl TxHooks for RestartProfile {
    fn on_start(&self, event: &TxEvent) -> Decision {
        let (priority, wasting) = self.announce(&self.profile(), event.aborts);
        if wasting && event.aborts == 0 {
            crate::switch_to_priority(priority - REPLACEMENT_LEVELS);
        }
        Decision::Proceed
    }

    fn on_abort(&self, event: &TxEvent) -> Decision {
        let (priority, wasting) = self.announce(&self.profile(), event.aborts);
        if wasting {
            crate::switch_to_priority(priority);
        }
        Decision::Proceed
    }

    fn on_attempt_end(&self, event: &TxEvent) {
        let profile = self.profiles.with(current_agent(), |profile| {
            profile.record(event);
            *profile
        });
        let aborts = if event.reason.is_none() {
            0
        } else {
            event.aborts
        };
        self.announce(&profile, aborts);
    }

    fn start_priority(&self, _event: &TxEvent) -> Option<i64> {
        Some(self.profile().priority())
    }
}
