//! The mode of a descriptor's attempt: one byte, [`Mode`], the only place where the
//! modes are defined; and the transaction's [`Escalation`], what its next attempt
//! must be.
//!
//! # States
//!
//! | mode | attempt | what it holds | reads | its end |
//! |---|---|---|---|---|
//! | `Idle` | none | nothing | — | — |
//! | `Settled` | none: the last ended as a straight commit | nothing | — | — |
//! | `Straight` | instrumented, straight | its sets | inlined, recorded | straight (`straight.rs`) |
//! | `Blocks` | instrumented, straight but for blocks it freed (`blocks.rs`) | its sets, its frees | inlined, recorded | short (`blocks.rs`) |
//! | `Instrumented` | instrumented | its sets, maybe locks | recorded | full (`Core::finish`) |
//! | `ReadOnlyStraight` | instrumented, read-only (`read_only.rs`), straight but for its end | nothing: no read set, no writes | inlined, not recorded | short (`read_only.rs`) |
//! | `ReadOnly` | instrumented, read-only | nothing | not recorded | full |
//! | `GateHeld` | instrumented, becoming irrevocable | the commit gate | recorded | full |
//! | `Irrevocable` | instrumented, irrevocable (`irrevocable.rs`) | the commit gate | recorded | full |
//! | `Serial` | irrevocable and alone (`serial.rs`) | commit gate, serial gate | recorded | full |
//! | `SoloStraight` | solo (`solo.rs`), straight | the solo gate | plain loads | straight |
//! | `SoloBlocks` | solo, straight but for blocks it freed | the solo gate | plain loads | short (`solo_blocks.rs`) |
//! | `Solo` | solo | the solo gate | plain loads | full |
//! | `SoloIrrevocable` | solo, irrevocable | the solo gate | plain loads | full |
//! | `SoloSerialStraight` | solo, irrevocable, straight (GCC's uninstrumented path alone) | the solo gate | plain loads | straight |
//! | `SoloDoomed` | solo, doomed | the solo gate | full path (fails) | full |
//!
//! *Straight* is the glossary's one word for the common case that needs no call: a
//! straight attempt began without hooks, statistics, aborts before it, anything to
//! wait for or irrevocability, and nothing but the inlined access paths, buffered
//! writes, solo writes within the undo log's kept capacity and allocations of
//! blocks (not for a boxed `TVar`) have touched it since; so its end has nothing to
//! release but its sets, its status words and the solo gate, and nothing to report.
//! One irrevocability keeps an attempt straight: a straight solo attempt's
//! (`SoloSerialStraight`), which waits for no one (it is alone) and whose end, a
//! commit, has nothing more to give back or report than `SoloStraight`'s. It is the
//! mode of GCC's uninstrumented path run by a thread alone with the engine
//! (`lutra-capi`'s `itm/`): begun and committed without a call.
//!
//! # Transitions
//!
//! Every transition is taken by the descriptor's owner (the thread or task running
//! the attempt); other descriptors never write a mode (they kill through the status
//! word, which the owner reads: `Core::check_usable`).
//!
//! | from | to | taken by |
//! |---|---|---|
//! | `Idle`, `Settled` | `Straight`, `Instrumented`, `SoloStraight`, `Solo` | `Core::start_attempt` |
//! | `Settled` | `Straight`, `SoloStraight` | `TxDescriptor::try_begin` |
//! | `Settled` | `ReadOnlyStraight`, `SoloStraight` | `TxDescriptor::try_begin_read_only` |
//! | `Idle`, `Settled` | `GateHeld`, then `Irrevocable` | `Core::start_special` (an irrevocable start) |
//! | `Idle`, `Settled` | `ReadOnlyStraight`, `ReadOnly` | `Core::start_special` (the read-only hint: `Escalation::ReadOnly`) |
//! | `ReadOnlyStraight` | `ReadOnly` | `Core::mark_not_straight` |
//! | `ReadOnlyStraight`, `ReadOnly`, `Blocks` | `Instrumented` | `Core::doom` (every doom: a write, a newer version, a conflict) |
//! | `Straight`, `Blocks` | `Instrumented` | `Core::mark_not_straight` (a gate, a lent value, a lock, a doom, a growing set, a boxed value), `Core::give_up_commit` |
//! | `Straight` | `Blocks` | `Core::note_free` |
//! | `SoloStraight`, `SoloBlocks` | `Solo` | `Core::mark_not_straight` |
//! | `SoloStraight` | `SoloBlocks` | `Core::note_free` |
//! | `Instrumented` | `GateHeld`, then `Irrevocable` | `Core::become_irrevocable` |
//! | `Solo` | `SoloIrrevocable` | `Core::become_irrevocable` |
//! | `SoloStraight` | `SoloSerialStraight` | `Core::become_irrevocable` (`Core::try_become_serial_straight`, inlined) |
//! | `SoloSerialStraight` | `SoloIrrevocable` | `Core::mark_not_straight` (a growing undo log, a free, a boxed value) |
//! | `Irrevocable` | `Serial` | `Core::become_serial` |
//! | any solo mode | `SoloDoomed` | `Core::doom` |
//! | any attempt | `Settled` | a straight commit (`Core::finish_straight`, which the blocks commits end with), or any commit on an engine without hooks or statistics of a transaction without aborts (`Core::finish`) |
//! | any attempt | `Idle` | every other end (`Core::finish`) |
//! | `Settled` | `Idle` | `TxDescriptor::prepare`, `Core::doom` |
//!
//! # Orthogonal to the mode
//! - The doom (`Core::doomed`, the reason an attempt will abort): an instrumented
//!   attempt of any mode may be doomed and keeps what it holds until its end (a
//!   doomed attempt that holds the commit gate gives it back then); only a solo one
//!   changes mode, because its plain reads must stop. Every doom closes the read
//!   front, so no inlined path runs on.
//! - `Core::solo_allowed`: an option of the descriptor, chosen by its driver.
//! - The transaction's [`Escalation`]: outlives its attempts.
//!
//! # Encoding
//! The mode is the third field of the read front (`read_set.rs`), so the inlined read
//! through a front tests it without reaching the descriptor, and an all-zero front is
//! `Idle`. Its bits make every test of a mode's kind one instruction: each of
//! [`Mode::PLAIN`] (reads and writes go straight to memory), [`Mode::STRAIGHT`],
//! [`Mode::SOLO`], [`Mode::GATE`] (holds the commit gate), [`Mode::IRREVOCABLE`] and
//! [`Mode::UNRECORDED`] (reads not recorded) is set in exactly the modes of the table
//! that are so; `Idle` is zero and
//! `Settled` has a bit of its own, so "an attempt runs" is a test too. A mode is
//! its bits (a further bit tells `Solo` from `SoloBlocks`, `Instrumented` from
//! `Idle`, `Serial` from `Irrevocable`; `Blocks` is `Instrumented`'s bits with
//! `Settled`'s, which [`Mode::active_bits`] leaves out, so it is active as
//! `Instrumented` is); the compiler rejects two modes of one value.

/// The mode of a descriptor's attempt (see the module's tables).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// No attempt runs; the next begins on the general path.
    Idle = 0,
    /// Instrumented, straight.
    Straight = Mode::STRAIGHT,
    /// Solo, straight.
    SoloStraight = Mode::SOLO | Mode::PLAIN | Mode::STRAIGHT,
    /// Solo, straight but for the blocks it freed.
    SoloBlocks = Mode::SOLO | Mode::PLAIN,
    /// Solo, not straight.
    Solo = Mode::SOLO | Mode::PLAIN | Mode::OTHER,
    /// Solo, irrevocable (alone, nothing can make it abort).
    SoloIrrevocable = Mode::SOLO | Mode::PLAIN | Mode::IRREVOCABLE,
    /// Solo, irrevocable and still straight: nothing to give back at its end but
    /// the solo gate.
    SoloSerialStraight = Mode::SOLO | Mode::PLAIN | Mode::IRREVOCABLE | Mode::STRAIGHT,
    /// Solo, doomed: its reads and writes take the full path, which fails.
    SoloDoomed = Mode::SOLO,
    /// Instrumented, not straight.
    Instrumented = Mode::OTHER,
    /// Instrumented, straight but for the blocks it freed (`blocks.rs`).
    Blocks = Mode::OTHER | Mode::SETTLED,
    /// Instrumented, holds the commit gate, not yet irrevocable.
    GateHeld = Mode::GATE,
    /// Instrumented, irrevocable: holds the commit gate, its status word marked.
    Irrevocable = Mode::GATE | Mode::IRREVOCABLE,
    /// Irrevocable and alone: holds the commit gate and the serial gate.
    Serial = Mode::GATE | Mode::IRREVOCABLE | Mode::OTHER,
    /// Instrumented, read-only (its reads are not recorded), nothing to report at its
    /// end; not `STRAIGHT` (its read set is closed, which the straight end takes for a
    /// solo attempt's): it ends through the call of `try_commit_after_inline`.
    ReadOnlyStraight = Mode::UNRECORDED | Mode::OTHER,
    /// Instrumented, read-only, not straight.
    ReadOnly = Mode::UNRECORDED,
    /// No attempt runs; the last transaction left nothing to give way to, on an
    /// engine without hooks or statistics: `try_begin` may begin the next.
    Settled = Mode::SETTLED,
}

impl Mode {
    /// The bit of the modes whose reads and writes go straight to memory.
    pub(crate) const PLAIN: u8 = 1;
    /// The bit of the straight modes.
    pub(crate) const STRAIGHT: u8 = 1 << 1;
    /// The bit of the solo modes.
    pub(crate) const SOLO: u8 = 1 << 2;
    /// The bit of the modes that hold the commit gate.
    pub(crate) const GATE: u8 = 1 << 3;
    /// The bit of the irrevocable modes.
    pub(crate) const IRREVOCABLE: u8 = 1 << 4;
    /// A bit that tells apart modes the others do not.
    const OTHER: u8 = 1 << 5;
    /// `Settled`'s bit: the one mode without an attempt that is not zero (`Blocks`
    /// borrows it: its other bit says that an attempt runs).
    const SETTLED: u8 = 1 << 6;
    /// The bit of the read-only modes: reads checked against the snapshot, not
    /// recorded (`read_only.rs`).
    pub(crate) const UNRECORDED: u8 = 1 << 7;

    /// Whether an attempt runs.
    #[inline(always)]
    pub(crate) fn is_active(self) -> bool {
        self.active_bits() != 0
    }

    /// The mode's bits, but for `Settled`'s: non-zero exactly when an attempt runs
    /// (for a test or-ed with others).
    #[inline(always)]
    pub(crate) fn active_bits(self) -> u8 {
        self as u8 & !Self::SETTLED
    }

    /// Whether the attempt's reads and writes go straight to memory: a solo attempt,
    /// not doomed. One bit test.
    #[inline(always)]
    pub(crate) fn is_plain(self) -> bool {
        self as u8 & Self::PLAIN != 0
    }

    /// Whether the attempt runs on the read-only hint: its reads are not recorded.
    /// One bit test.
    #[inline(always)]
    pub(crate) fn is_unrecorded(self) -> bool {
        self as u8 & Self::UNRECORDED != 0
    }

    /// Whether the attempt is solo or read-only: whether a write must take
    /// `store_slow`'s first branch. One bit test.
    #[inline(always)]
    pub(crate) fn is_solo_or_unrecorded(self) -> bool {
        self as u8 & (Self::SOLO | Self::UNRECORDED) != 0
    }

    /// Whether the attempt is straight (see the module header). One bit test.
    #[inline(always)]
    pub(crate) fn is_straight(self) -> bool {
        self as u8 & Self::STRAIGHT != 0
    }

    /// Whether a solo attempt runs (doomed or not). One bit test.
    #[inline(always)]
    pub(crate) fn is_solo(self) -> bool {
        self as u8 & Self::SOLO != 0
    }

    /// Whether the attempt is irrevocable. One bit test.
    #[inline(always)]
    pub(crate) fn is_irrevocable(self) -> bool {
        self as u8 & Self::IRREVOCABLE != 0
    }

    /// Whether the attempt holds the commit gate (`gate.rs`). One bit test.
    #[inline(always)]
    pub(crate) fn holds_gate(self) -> bool {
        self as u8 & Self::GATE != 0
    }

    /// The mode once something the straight end cannot do is taken on.
    #[inline(always)]
    pub(crate) fn not_straight(self) -> Self {
        match self {
            Self::Straight | Self::Blocks => Self::Instrumented,
            Self::SoloStraight | Self::SoloBlocks => Self::Solo,
            Self::SoloSerialStraight => Self::SoloIrrevocable,
            Self::ReadOnlyStraight => Self::ReadOnly,
            other => other,
        }
    }

    /// The mode once the attempt is doomed.
    #[inline]
    pub(crate) fn doomed(self) -> Self {
        match self {
            Self::Settled => Self::Idle,
            Self::Straight | Self::Blocks | Self::ReadOnlyStraight | Self::ReadOnly => {
                Self::Instrumented
            }
            mode if mode.is_solo() => Self::SoloDoomed,
            other => other,
        }
    }
}

/// What the next attempt of a transaction must be: outlives its attempts, reset
/// by `prepare` and by a commit.
///
/// | escalation | next attempt | set by | cleared by |
/// |---|---|---|---|
/// | `None` | as the options say | `prepare`, a commit, a fallback's `retry` | — |
/// | `Irrevocable` | irrevocable, at the program's request (or a failed attempt to become so) | `TxDescriptor::restart_irrevocable`, `Core::become_irrevocable`, a serializing scheduler | a commit, `prepare` |
/// | `Fallback` | irrevocable, by the engine's fallback (`fallback.rs`); the program has not asked, so it may still `retry` | `Core::choose_fallback` | a request of the program (to `Irrevocable`), a `retry`, a commit, `prepare` |
/// | `ReadOnly` | read-only, its reads not recorded (`read_only.rs`) | `prepare` with the read-only hint; an abort of a read-only attempt while the transaction has read-only attempts left | the start of that attempt, the fallback, `prepare` |
///
/// While an irrevocable attempt runs, `Fallback` also tells that its irrevocability
/// is the fallback's (`TxDescriptor::is_fallback_irrevocable`).
/// `None` is zero, so that `escalation as u8` is non-zero exactly when the next
/// attempt must be irrevocable or read-only (either starts on the special path).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Escalation {
    /// Nothing: the next attempt is as the transaction's options say.
    None = 0,
    /// The next attempt is read-only: its reads are not recorded. One, so that
    /// `prepare` sets it from the hint without a branch.
    ReadOnly = 1,
    /// The next attempt is irrevocable at the program's request.
    Irrevocable = 2,
    /// The next attempt is irrevocable by the engine's fallback.
    Fallback,
}

impl Escalation {
    /// Whether the next attempt must be irrevocable.
    #[inline(always)]
    pub(crate) fn is_irrevocable(self) -> bool {
        matches!(self, Self::Irrevocable | Self::Fallback)
    }
}

#[cfg(test)]
mod tests {
    use super::Mode;

    const ALL: [Mode; 16] = [
        Mode::Idle,
        Mode::Settled,
        Mode::Straight,
        Mode::Instrumented,
        Mode::Blocks,
        Mode::GateHeld,
        Mode::Irrevocable,
        Mode::Serial,
        Mode::SoloStraight,
        Mode::SoloBlocks,
        Mode::Solo,
        Mode::SoloIrrevocable,
        Mode::SoloSerialStraight,
        Mode::SoloDoomed,
        Mode::ReadOnlyStraight,
        Mode::ReadOnly,
    ];

    /// The bits of the encoding say what the table says, and no two modes share a
    /// value.
    #[test]
    fn bits_match_the_table() {
        let mut values: Vec<u8> = ALL.iter().map(|mode| *mode as u8).collect();
        values.sort_unstable();
        values.dedup();
        assert_eq!(values.len(), ALL.len());
        for mode in ALL {
            let plain = matches!(
                mode,
                Mode::SoloStraight
                    | Mode::SoloBlocks
                    | Mode::Solo
                    | Mode::SoloIrrevocable
                    | Mode::SoloSerialStraight
            );
            assert_eq!(mode.is_plain(), plain, "{mode:?}");
            let straight = matches!(
                mode,
                Mode::Straight | Mode::SoloStraight | Mode::SoloSerialStraight
            );
            assert_eq!(mode.is_straight(), straight, "{mode:?}");
            let solo = plain || mode == Mode::SoloDoomed;
            assert_eq!(mode.is_solo(), solo, "{mode:?}");
            let gate = matches!(mode, Mode::GateHeld | Mode::Irrevocable | Mode::Serial);
            assert_eq!(mode.holds_gate(), gate, "{mode:?}");
            let irrevocable = matches!(
                mode,
                Mode::Irrevocable | Mode::Serial | Mode::SoloIrrevocable | Mode::SoloSerialStraight
            );
            assert_eq!(mode.is_irrevocable(), irrevocable, "{mode:?}");
            let unrecorded = matches!(mode, Mode::ReadOnlyStraight | Mode::ReadOnly);
            assert_eq!(mode.is_unrecorded(), unrecorded, "{mode:?}");
            assert_eq!(mode.is_solo_or_unrecorded(), solo || unrecorded, "{mode:?}");
            let active = !matches!(mode, Mode::Idle | Mode::Settled);
            assert_eq!(mode.is_active(), active, "{mode:?}");
        }
    }

    /// Leaving the straight modes and dooming keep a mode's kind (solo or not) and
    /// what it holds, and never give a straight or plain mode.
    #[test]
    fn transitions_keep_the_kind() {
        for mode in ALL.into_iter().filter(|mode| mode.is_active()) {
            let after = mode.not_straight();
            assert!(!after.is_straight() && after.is_solo() == mode.is_solo());
            assert_eq!(after.is_unrecorded(), mode.is_unrecorded());
            assert_ne!(after, Mode::ReadOnlyStraight);
            assert_eq!(after.holds_gate(), mode.holds_gate());
            assert_eq!(after.is_irrevocable(), mode.is_irrevocable());
            let doomed = mode.doomed();
            assert!(!doomed.is_straight() && !doomed.is_plain() && !doomed.is_unrecorded());
            assert!(doomed.is_active() && doomed.is_solo() == mode.is_solo());
            assert_eq!(doomed.holds_gate(), mode.holds_gate());
        }
    }
}
