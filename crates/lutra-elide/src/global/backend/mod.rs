//! What runs a speculative transaction of the elided lock. Each backend is a file
//! offering the same operation ([`Speculation`]):
//!
//! - `stm.rs`: a software transaction of the engine (the default).
//! - `rtm.rs`: an x86 RTM hardware transaction, when the processor has RTM (detected at
//!   run time; the code is compiled everywhere and unreachable without it).
//! - `fake.rs`: a software transaction whose aborts a script injects: deterministic
//!   hardware behaviour for testing the policy.
//!
//! The fallback under the lock is the same for every backend: an irrevocable,
//! instrumented software transaction (`stm::run_attempt` with `locked`), which drains
//! the other software transactions as libitm's serial mode does, so concurrent
//! read-only transactions never see torn data.
//!
//! # Invariants
//! - A backend reports every abort with its class ([`Aborted`]); the policy never
//!   looks at a backend's own abort codes.

pub(crate) mod fake;
pub(crate) mod rtm;
pub(crate) mod stm;

pub use fake::{AbortBeyond, RandomAborts, Replay, Script};

use crate::global::lock::LockWord;
use crate::global::policy::AbortClass;
use crate::global::section::Section;
use lutra_stm::{Abort, AbortReason, TxDescriptor};
use std::fmt;
use std::sync::Arc;

/// The steps of one attempt: runs the section's steps up to its end.
pub(crate) type Body<'b> = dyn FnMut(&mut Section<'_>) -> Result<(), Abort> + 'b;

/// One attempt to run: the thread's descriptor, the lock, the site, and how the
/// previous attempt of the same transaction ended.
pub(crate) struct Attempt<'a> {
    pub(crate) desc: &'a mut TxDescriptor,
    pub(crate) lock: &'a LockWord,
    pub(crate) site: u32,
    /// The engine's reason for the previous software attempt's abort (`None` for the
    /// first attempt, or after a hardware attempt).
    pub(crate) previous: Option<AbortReason>,
}

/// How an attempt aborted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Aborted {
    pub(crate) class: AbortClass,
    /// The engine's reason, for a software attempt.
    pub(crate) reason: Option<AbortReason>,
}

/// One way to run a speculative transaction.
pub(crate) trait Speculation: Send + Sync {
    /// A short name (`"stm"`, `"rtm"`, `"fake"`).
    fn name(&self) -> &'static str;

    /// Runs `body` as one speculative attempt and commits it; on abort, everything it
    /// did is undone and its class is returned.
    fn speculate(&self, attempt: Attempt<'_>, body: &mut Body<'_>) -> Result<(), Aborted>;

    /// An abort to inject at the yield point after `steps` steps of a software attempt
    /// begun at `site` (none but for the fake backend).
    fn abort_at_yield_point(&self, _site: u32, _steps: u32) -> Option<AbortClass> {
        None
    }

    /// An abort to inject when a software attempt of `steps` steps is about to commit.
    fn abort_at_commit(&self, _site: u32, _steps: u32) -> Option<AbortClass> {
        None
    }
}

/// The backend of an elided global lock: what runs its speculative transactions.
///
/// ```
/// use lutra_elide::global::Backend;
/// assert_eq!(Backend::default().name(), "stm");
/// // SAFETY: this example accesses no TVar outside the lock.
/// let hardware = unsafe { Backend::rtm() };
/// assert_eq!(hardware.is_some(), Backend::rtm_available());
/// ```
#[derive(Clone)]
pub struct Backend(pub(crate) Arc<dyn Speculation>);

impl Backend {
    /// Software transactions of the lock's engine (the default).
    pub fn stm() -> Self {
        Self(Arc::new(stm::StmSpeculation))
    }

    /// Software transactions with aborts injected by `script`, classified as the script
    /// says: a deterministic stand-in for hardware transactions, to test the policy.
    /// The script is shared by every thread of the lock.
    pub fn fake(script: impl Script + 'static) -> Self {
        Self(Arc::new(fake::FakeHardware::new(script)))
    }

    /// Whether this processor has x86 RTM (restricted transactional memory).
    pub fn rtm_available() -> bool {
        rtm::available()
    }

    /// Hardware transactions (x86 RTM), or `None` when the processor lacks RTM.
    ///
    /// Inside a hardware transaction a step reads and writes [`lutra_stm::TVar`]s
    /// directly (the hardware tracks them); boxed values are only read, a write of one
    /// runs the transaction again under the lock.
    ///
    /// # Safety
    /// Every `TVar` a section of this lock touches must be accessed only inside
    /// sections of this lock while any runs: hardware transactions write the variables
    /// without the engine's records, which other software transactions would not see.
    pub unsafe fn rtm() -> Option<Self> {
        rtm::available().then(|| Self(Arc::new(rtm::RtmSpeculation)))
    }

    /// `"stm"`, `"rtm"` or `"fake"`.
    pub fn name(&self) -> &'static str {
        self.0.name()
    }
}

impl Default for Backend {
    /// [`Backend::stm`].
    fn default() -> Self {
        Self::stm()
    }
}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Backend").field(&self.name()).finish()
    }
}
