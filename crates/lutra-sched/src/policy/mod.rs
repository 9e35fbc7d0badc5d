//! Transaction-aware scheduling policies, installed in the engine's hooks
//! ([`lutra_stm::TxHooks`]) and chosen by name at start-up ([`Policy`]).
//!
//! | policy | file | rule |
//! |--------|------|------|
//! | `round-robin` | `round_robin.rs` | LUTS alone: no hook acts; never more running contexts than cores, FIFO turns |
//! | `ats` | `ats.rs` | contention intensity per task; above 0.5 a start waits in one global FIFO queue (one such attempt at a time) |
//! | `ciluts` | `ciluts.rs` | the same intensity; above 0.5 a start switches once to a task announcing another transaction id |
//! | `ctluts` | `ctluts.rs` | conflict table per pair of ids and the id each worker runs; a start switches once if P(conflict with a running id) > 0.5 |
//! | `restart-profile` | `restart_profile.rs` | TxLinux: moving averages of restarts and wasted time per task give a priority (fed to the `Priority` manager) and deschedule wasting tasks |
//!
//! `intensity.rs` holds the contention-intensity equation shared by ATS and CILUTS;
//! `agents.rs` the per-task and per-slot state the policies keep.
//!
//! # Invariants
//! - The transaction id of LUTS is the engine's site (`Stm::transaction().site(id)`).
//! - Decisions are taken in `on_start` and `on_abort` (outside attempts: they may park
//!   or switch); bookkeeping happens in `on_attempt_end`, which the engine calls once
//!   for every attempt's end, however it ends, so nothing a policy holds can leak.
//! - A start switches away at most once, then runs: no policy can pass a task over
//!   forever.
//! - Every policy works outside tasks too (plain threads): switches yield the thread,
//!   waits park it.
//!
//! Seeds: 004 (LUTS: ATS, CILUTS, CTLUTS, Section 3.3 and Listing 4) and 003 (TxLinux:
//! per-thread transaction profiles, Section 6).

mod agents;
mod ats;
mod ciluts;
mod ctluts;
mod intensity;
mod restart_profile;
mod round_robin;

pub use ats::Ats;
pub use ciluts::Ciluts;
pub use ctluts::{CT_THRESHOLD, Ctluts, DEFAULT_MAX_IDS};
pub use intensity::{ALPHA, CI_THRESHOLD};
pub use restart_profile::{
    BETA, DEFAULT_SWITCH_COST, MAX_PENALTY, MIN_SPIKE_RESTARTS, PENALTY_PER_RESTART, Profile,
    REPLACEMENT_LEVELS, RESTART_SPIKE, RestartProfile, WASTING_PENALTY,
};
pub use round_robin::RoundRobin;

use crate::TaskParking;
use lutra_stm::{Config, TxHooks, cm};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// A scheduling policy, selectable by name (`round-robin`, `ats`, `ciluts`, `ctluts`,
/// `restart-profile`).
///
/// ```
/// use lutra_sched::policy::Policy;
/// use lutra_stm::{Config, Stm, TVar};
///
/// let policy: Policy = "ctluts".parse().unwrap();
/// let runtime = lutra_sched::Runtime::builder().workers(2).build();
/// let stm = Stm::new(policy.configure(Config::default(), runtime.workers()));
/// let hits = std::sync::Arc::new(TVar::new(0u32));
/// let tasks: Vec<_> = (0..8)
///     .map(|_| {
///         let (stm, hits) = (stm.clone(), hits.clone());
///         runtime.spawn(move || stm.transaction().site(1).run(|tx| tx.modify(&hits, |n| n + 1)))
///     })
///     .collect();
/// tasks.into_iter().for_each(|task| task.join().unwrap());
/// assert_eq!(stm.atomically(|tx| tx.read(&hits)), 8);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// LUTS alone ([`RoundRobin`]).
    RoundRobin,
    /// Adaptive transaction scheduling ([`Ats`]).
    Ats,
    /// Contention intensity with LUTS's switch ([`Ciluts`]).
    Ciluts,
    /// Conflict table with LUTS's switch ([`Ctluts`]).
    Ctluts,
    /// TxLinux's restart profiles ([`RestartProfile`]).
    RestartProfile,
}

impl Policy {
    /// Every policy, in the order of the module's table.
    pub const ALL: [Policy; 5] = [
        Self::RoundRobin,
        Self::Ats,
        Self::Ciluts,
        Self::Ctluts,
        Self::RestartProfile,
    ];

    /// The policy's name, as [`Policy::from_name`] accepts it.
    pub fn name(self) -> &'static str {
        match self {
            Self::RoundRobin => "round-robin",
            Self::Ats => "ats",
            Self::Ciluts => "ciluts",
            Self::Ctluts => "ctluts",
            Self::RestartProfile => "restart-profile",
        }
    }

    /// The policy called `name` (case and `-` / `_` insensitive; `luts` and `rr` also
    /// name round-robin, `txlinux` restart-profile), or `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        let name = name.to_ascii_lowercase().replace('_', "-");
        match name.as_str() {
            "round-robin" | "roundrobin" | "rr" | "luts" => Some(Self::RoundRobin),
            "ats" => Some(Self::Ats),
            "ciluts" => Some(Self::Ciluts),
            "ctluts" => Some(Self::Ctluts),
            "restart-profile" | "txlinux" => Some(Self::RestartProfile),
            _ => None,
        }
    }

    /// Fresh hooks of this policy for an engine whose transactions run on `workers`
    /// workers (CTLUTS keeps one active-vector entry per worker; workers with a higher
    /// index are not tracked). Install one instance per engine.
    pub fn hooks(self, workers: usize) -> Arc<dyn TxHooks> {
        match self {
            Self::RoundRobin => Arc::new(RoundRobin),
            Self::Ats => Arc::new(Ats::new()),
            Self::Ciluts => Arc::new(Ciluts::new()),
            Self::Ctluts => Arc::new(Ctluts::new(workers)),
            Self::RestartProfile => Arc::new(RestartProfile::new()),
        }
    }

    /// `config` with this policy's hooks (see [`Policy::hooks`]) and task parking
    /// ([`TaskParking`], through which `SwitchAway` runs LUTS's switch); restart-profile
    /// also installs the [`Priority`](cm::Priority) manager, through which its
    /// priorities act.
    pub fn configure(self, config: Config, workers: usize) -> Config {
        let config = config
            .with_hooks(self.hooks(workers))
            .with_parking(Arc::new(TaskParking));
        match self {
            Self::RestartProfile => config.with_manager(cm::Priority),
            _ => config,
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A policy name that [`Policy::from_name`] does not know; holds the name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPolicy(pub String);

impl fmt::Display for UnknownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Policy::ALL.iter().map(|policy| policy.name()).collect();
        write!(
            f,
            "unknown scheduling policy '{}' (expected one of: {})",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownPolicy {}

impl FromStr for Policy {
    type Err = UnknownPolicy;

    /// As [`Policy::from_name`].
    ///
    /// # Errors
    /// [`UnknownPolicy`] with the name, whose message lists the accepted names.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::from_name(name).ok_or_else(|| UnknownPolicy(name.to_owned()))
    }
}
