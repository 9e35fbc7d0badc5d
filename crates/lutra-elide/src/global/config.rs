//! Every tunable of the elided global lock in one place, with the paper's values as
//! defaults (seed 000, Section V.A: `TRANSIENT_RETRY_MAX` 3, `GIL_RETRY_MAX` 16,
//! `INITIAL_TRANSACTION_LENGTH` 255, `PROFILING_PERIOD` 300, `ADJUSTMENT_THRESHOLD` 3,
//! `ATTENUATION_RATE` 0.75).
//!
//! # Invariants
//! - A length is at least 1 ([`LengthPolicy::Fixed`] and [`Adaptive::initial`] are
//!   checked by [`GilConfig::validate`]).

/// How many yield points a transaction covers before it ends (its length, the paper's
/// `yield_point_counter`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LengthPolicy {
    /// The same length at every site (the paper's HTM-1, HTM-16, HTM-256).
    Fixed(u32),
    /// A length per yield-point site, shortened while the site aborts too often
    /// (the paper's HTM-dynamic, Fig. 3).
    Dynamic(Adaptive),
}

impl LengthPolicy {
    /// The paper's dynamic adjustment with its constants.
    pub const DYNAMIC: LengthPolicy = LengthPolicy::Dynamic(Adaptive::PAPER);

    /// `"1"`, `"16"`, … for fixed lengths, `"dynamic"` otherwise.
    pub fn label(&self) -> String {
        match self {
            Self::Fixed(length) => length.to_string(),
            Self::Dynamic(_) => "dynamic".into(),
        }
    }
}

impl Default for LengthPolicy {
    /// [`LengthPolicy::DYNAMIC`].
    fn default() -> Self {
        Self::DYNAMIC
    }
}

/// The constants of Fig. 3: per-site length adjustment during a profiling period.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Adaptive {
    /// The length a site starts with (`INITIAL_TRANSACTION_LENGTH`).
    pub initial: u32,
    /// Transactions started at a site, since its last adjustment, whose aborts are
    /// watched (`PROFILING_PERIOD`).
    pub profiling_period: u32,
    /// Aborted transactions tolerated in a profiling period (`ADJUSTMENT_THRESHOLD`):
    /// the next one shortens the length.
    pub threshold: u32,
    /// A shortened length is the old one times this, rounded down, at least 1
    /// (`ATTENUATION_RATE`).
    pub attenuation: f64,
}

impl Adaptive {
    /// The paper's constants: 255, 300, 3, 0.75.
    pub const PAPER: Adaptive = Adaptive {
        initial: 255,
        profiling_period: 300,
        threshold: 3,
        attenuation: 0.75,
    };

    /// The length after one shortening of `length`: `⌊length × attenuation⌋`, at least 1.
    ///
    /// ```
    /// use lutra_elide::global::Adaptive;
    /// assert_eq!(Adaptive::PAPER.shorten(255), 191);
    /// assert_eq!(Adaptive::PAPER.shorten(2), 1);
    /// assert_eq!(Adaptive::PAPER.shorten(1), 1);
    /// ```
    pub fn shorten(&self, length: u32) -> u32 {
        ((f64::from(length) * self.attenuation) as u32).clamp(1, length.max(1))
    }
}

impl Default for Adaptive {
    /// [`Adaptive::PAPER`].
    fn default() -> Self {
        Self::PAPER
    }
}

/// How an elided global lock behaves. Build it with `GilConfig::default()` and the
/// `with_*` methods.
///
/// ```
/// use lutra_elide::global::{GilConfig, LengthPolicy};
/// let config = GilConfig::default().with_length(LengthPolicy::Fixed(16));
/// assert_eq!(config.transient_retries, 3);
/// assert_eq!(config.lock_retries, 16);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GilConfig {
    /// Transient aborts of one transaction before it takes the lock
    /// (`TRANSIENT_RETRY_MAX`: the attempt that meets the last one takes the lock).
    pub transient_retries: u32,
    /// Aborts of one transaction caused by the lock being taken before it takes the
    /// lock itself (`GIL_RETRY_MAX`).
    pub lock_retries: u32,
    /// Transaction length per site.
    pub length: LengthPolicy,
    /// Rounds a thread spins (the first 64 with a pause instruction, the rest yielding
    /// the processor) waiting for a held lock before it blocks.
    pub spin_rounds: u32,
    /// Yield points a thread passes holding the lock while it is the only live thread
    /// (it then performs no yield at all in the paper; a software transaction's
    /// buffers grow with its length, so here it commits after this many).
    pub single_thread_length: u32,
    /// Whether critical sections run as transactions at all: `false` gives the plain
    /// global lock (every section takes the lock), the paper's GIL baseline.
    pub elide: bool,
}

impl Default for GilConfig {
    /// The paper's retry limits, dynamic length, 100 spin rounds, 255 yield points per
    /// single-thread section, elision on.
    fn default() -> Self {
        Self {
            transient_retries: 3,
            lock_retries: 16,
            length: LengthPolicy::DYNAMIC,
            spin_rounds: 100,
            single_thread_length: 255,
            elide: true,
        }
    }
}

impl GilConfig {
    /// Sets the length policy.
    pub fn with_length(mut self, length: LengthPolicy) -> Self {
        self.length = length;
        self
    }

    /// Sets the retry limits for transient aborts and for aborts by the lock.
    pub fn with_retries(mut self, transient: u32, lock: u32) -> Self {
        self.transient_retries = transient;
        self.lock_retries = lock;
        self
    }

    /// Sets the spin rounds before blocking on a held lock.
    pub fn with_spin_rounds(mut self, rounds: u32) -> Self {
        self.spin_rounds = rounds;
        self
    }

    /// Turns elision on (`true`, the default) or off (the plain global lock).
    pub fn with_elision(mut self, elide: bool) -> Self {
        self.elide = elide;
        self
    }

    /// Checks that every length is at least 1 and the attenuation is in (0, 1].
    ///
    /// # Panics
    /// On a violation, naming the field.
    pub fn validate(&self) {
        match self.length {
            LengthPolicy::Fixed(length) => assert!(length >= 1, "a fixed length must be ≥ 1"),
            LengthPolicy::Dynamic(adaptive) => {
                assert!(adaptive.initial >= 1, "Adaptive::initial must be ≥ 1");
                assert!(
                    adaptive.attenuation > 0.0 && adaptive.attenuation <= 1.0,
                    "Adaptive::attenuation must be in (0, 1]"
                );
            }
        }
        assert!(
            self.single_thread_length >= 1,
            "single_thread_length must be ≥ 1"
        );
    }
}
