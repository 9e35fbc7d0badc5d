//! What a transaction does after an abort: the decisions of seed 000's Fig. 1, as a
//! small state machine separate from any backend so that scripted abort sequences can
//! exercise every rule.
//!
//! # Protocol (one transaction, Fig. 1 lines 9-37)
//! 1. The budget starts with `transient_retries` and `lock_retries`.
//! 2. A [`AbortClass::LockHeld`] abort spends one lock retry: while some are left,
//!    spin until the lock is free and run again (take the lock if it stays held);
//!    the abort that spends the last one takes the lock.
//! 3. A [`AbortClass::Persistent`] abort takes the lock at once.
//! 4. A [`AbortClass::Transient`] abort spends one transient retry: while some are
//!    left, run again; the abort that spends the last one takes the lock.
//!
//! # Invariants
//! - A transaction aborts at most `transient_retries + lock_retries - 1` times before
//!   it runs under the lock (each budget counts separately, as in the paper).

use crate::global::config::GilConfig;
use lutra_stm::AbortReason;

/// The class of an aborted transaction, as the policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AbortClass {
    /// Likely to succeed if run again: a conflict with another transaction (zEC12's
    /// condition code 2; RTM's retry and conflict bits).
    Transient,
    /// Will fail again: the transaction outgrew the buffers (capacity, overflow), or it
    /// needs to run irrevocably (I/O, a restricted instruction, an explicit request).
    Persistent,
    /// The lock was taken while the transaction ran, or is held as it aborts (Fig. 1,
    /// line 21: checked first).
    LockHeld,
}

impl AbortClass {
    /// Number of classes; `class as usize` indexes arrays of this length.
    pub const COUNT: usize = 3;
    /// Every class, in `repr` order.
    pub const ALL: [AbortClass; Self::COUNT] = [Self::Transient, Self::Persistent, Self::LockHeld];

    /// `"transient"`, `"persistent"`, `"lock"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Transient => "transient",
            Self::Persistent => "persistent",
            Self::LockHeld => "lock",
        }
    }

    /// The class of a software transaction's abort: the lock being held decides first
    /// (Fig. 1, line 21), then a capacity abort is persistent, every other reason (a
    /// conflict, giving way to an irrevocable transaction) transient.
    ///
    /// ```
    /// use lutra_elide::global::AbortClass;
    /// use lutra_stm::AbortReason;
    /// assert_eq!(AbortClass::of_stm(AbortReason::Capacity, false), AbortClass::Persistent);
    /// assert_eq!(AbortClass::of_stm(AbortReason::Validation, false), AbortClass::Transient);
    /// assert_eq!(AbortClass::of_stm(AbortReason::Capacity, true), AbortClass::LockHeld);
    /// ```
    pub fn of_stm(reason: AbortReason, lock_held: bool) -> Self {
        if lock_held {
            Self::LockHeld
        } else if reason == AbortReason::Capacity {
            Self::Persistent
        } else {
            Self::Transient
        }
    }
}

/// Why a transaction ran under the lock instead of as a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FallbackCause {
    /// Only one thread was live (Fig. 1, lines 2-3).
    SingleThread,
    /// The lock was held when the transaction was to begin and stayed held while the
    /// thread spun (Fig. 1, lines 6-7).
    LockBusy,
    /// The lock kept being taken: the last lock retry was spent, or the lock stayed
    /// held after an abort (Fig. 1, lines 21-27).
    LockConflicts,
    /// A persistent abort (Fig. 1, lines 28-29).
    Persistent,
    /// The last transient retry was spent (Fig. 1, lines 31-35).
    TransientAborts,
    /// Elision is off: the plain global lock.
    NotElided,
}

impl FallbackCause {
    /// Number of causes; `cause as usize` indexes arrays of this length.
    pub const COUNT: usize = 6;
    /// Every cause, in `repr` order.
    pub const ALL: [FallbackCause; Self::COUNT] = [
        Self::SingleThread,
        Self::LockBusy,
        Self::LockConflicts,
        Self::Persistent,
        Self::TransientAborts,
        Self::NotElided,
    ];

    /// A short lower-case name for tables and CSV columns.
    pub fn name(self) -> &'static str {
        match self {
            Self::SingleThread => "single_thread",
            Self::LockBusy => "lock_busy",
            Self::LockConflicts => "lock_conflicts",
            Self::Persistent => "persistent",
            Self::TransientAborts => "transient",
            Self::NotElided => "not_elided",
        }
    }
}

/// What to do after an abort.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AfterAbort {
    /// Run the transaction again.
    Retry,
    /// Spin while the lock is held; run again if it is released, take it otherwise.
    SpinThenRetry,
    /// Run under the lock.
    TakeLock(FallbackCause),
}

/// The retry counters of one transaction (Fig. 1, lines 9-10).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RetryBudget {
    transient_left: u32,
    lock_left: u32,
}

impl RetryBudget {
    /// A full budget.
    pub(crate) fn new(config: &GilConfig) -> Self {
        Self {
            transient_left: config.transient_retries,
            lock_left: config.lock_retries,
        }
    }

    /// Spends the budget for an abort of `class` and says what comes next (see the
    /// module protocol).
    pub(crate) fn after_abort(&mut self, class: AbortClass) -> AfterAbort {
        match class {
            AbortClass::LockHeld => {
                self.lock_left = self.lock_left.saturating_sub(1);
                if self.lock_left > 0 {
                    AfterAbort::SpinThenRetry
                } else {
                    AfterAbort::TakeLock(FallbackCause::LockConflicts)
                }
            }
            AbortClass::Persistent => AfterAbort::TakeLock(FallbackCause::Persistent),
            AbortClass::Transient => {
                self.transient_left = self.transient_left.saturating_sub(1);
                if self.transient_left > 0 {
                    AfterAbort::Retry
                } else {
                    AfterAbort::TakeLock(FallbackCause::TransientAborts)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decisions(classes: &[AbortClass]) -> Vec<AfterAbort> {
        let mut budget = RetryBudget::new(&GilConfig::default());
        classes
            .iter()
            .map(|&class| budget.after_abort(class))
            .collect()
    }

    #[test]
    fn third_transient_abort_takes_the_lock() {
        use AfterAbort::*;
        let t = AbortClass::Transient;
        assert_eq!(
            decisions(&[t, t, t]),
            [Retry, Retry, TakeLock(FallbackCause::TransientAborts)]
        );
    }

    #[test]
    fn sixteenth_lock_abort_takes_the_lock() {
        let all = decisions(&[AbortClass::LockHeld; 16]);
        assert!(all[..15].iter().all(|&d| d == AfterAbort::SpinThenRetry));
        assert_eq!(all[15], AfterAbort::TakeLock(FallbackCause::LockConflicts));
    }

    #[test]
    fn persistent_takes_the_lock_at_once_and_budgets_are_separate() {
        use AbortClass::*;
        use AfterAbort::*;
        assert_eq!(
            decisions(&[Persistent]),
            [TakeLock(FallbackCause::Persistent)]
        );
        assert_eq!(
            decisions(&[Transient, LockHeld, Transient, LockHeld, Transient]),
            [
                Retry,
                SpinThenRetry,
                Retry,
                SpinThenRetry,
                TakeLock(FallbackCause::TransientAborts)
            ]
        );
    }

    #[test]
    fn zero_budgets_take_the_lock_at_the_first_abort() {
        let mut budget = RetryBudget::new(&GilConfig::default().with_retries(0, 0));
        assert_eq!(
            budget.after_abort(AbortClass::Transient),
            AfterAbort::TakeLock(FallbackCause::TransientAborts)
        );
        assert_eq!(
            budget.after_abort(AbortClass::LockHeld),
            AfterAbort::TakeLock(FallbackCause::LockConflicts)
        );
    }
}
