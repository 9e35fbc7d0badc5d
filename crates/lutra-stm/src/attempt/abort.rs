//! Why a transaction attempt ended without committing.
//!
//! An abort is a value (`Result<T, Abort>`), never an unwind. Once an attempt is
//! doomed, every further access and the commit report the same abort again (the abort
//! is sticky), so code that ignores an error cannot keep a doomed attempt running.

use std::fmt;

/// The cause of an abort, as counted in the statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum AbortReason {
    /// A location read earlier was overwritten by a commit: the snapshot could not be
    /// extended.
    Validation = 0,
    /// A read met a location locked by another transaction and the contention manager
    /// chose to abort the reader.
    ReadConflict = 1,
    /// A write (or commit-time lock) met a location locked by another transaction and
    /// the contention manager chose to abort the writer.
    WriteConflict = 2,
    /// Another transaction's contention manager killed this one.
    Killed = 3,
    /// The program asked for it ([`Transaction::abort`](crate::Transaction::abort),
    /// `stm_abort`).
    Explicit = 4,
    /// The read or write set outgrew [`Config::max_set_entries`](crate::Config).
    Capacity = 5,
    /// The attempt yielded to an irrevocable transaction, or must restart to become
    /// irrevocable itself.
    Irrevocable = 6,
    /// The program called [`Transaction::retry`](crate::Transaction::retry): wait until
    /// something read changes.
    Retry = 7,
    /// A panic unwound out of the transaction's closure.
    Panic = 8,
    /// The program misused the API in a way detected at run time (for example `retry`
    /// inside an irrevocable transaction).
    Misuse = 9,
    /// An attempt run on the program's read-only hint, which keeps no read set, met a
    /// location written by a commit after its snapshot: it cannot extend the snapshot
    /// (nothing recorded to validate), so it aborts, as tinySTM's read-only
    /// transactions do.
    Snapshot = 10,
    /// An attempt run on the program's read-only hint did what needs a read or write
    /// set (a write, a free, a `retry`, becoming irrevocable): it runs again keeping
    /// its sets.
    NotReadOnly = 11,
}

impl AbortReason {
    /// Number of reasons; `reason as usize` indexes arrays of this length.
    pub const COUNT: usize = 12;

    /// Every reason, in `repr` order.
    pub const ALL: [AbortReason; Self::COUNT] = [
        Self::Validation,
        Self::ReadConflict,
        Self::WriteConflict,
        Self::Killed,
        Self::Explicit,
        Self::Capacity,
        Self::Irrevocable,
        Self::Retry,
        Self::Panic,
        Self::Misuse,
        Self::Snapshot,
        Self::NotReadOnly,
    ];

    /// A short lower-case name, used in statistics tables and by the C ABI.
    pub fn name(self) -> &'static str {
        match self {
            Self::Validation => "validation",
            Self::ReadConflict => "read_conflict",
            Self::WriteConflict => "write_conflict",
            Self::Killed => "killed",
            Self::Explicit => "explicit",
            Self::Capacity => "capacity",
            Self::Irrevocable => "irrevocable",
            Self::Retry => "retry",
            Self::Panic => "panic",
            Self::Misuse => "misuse",
            Self::Snapshot => "snapshot",
            Self::NotReadOnly => "not_read_only",
        }
    }

    /// Whether this reason is a conflict with another transaction (as opposed to a
    /// decision of the program or a limit).
    pub fn is_conflict(self) -> bool {
        matches!(
            self,
            Self::Validation
                | Self::ReadConflict
                | Self::WriteConflict
                | Self::Killed
                | Self::Snapshot
        )
    }
}

/// A transaction attempt has been aborted; return it with `?` so that the engine can
/// roll back and restart (or, for [`AbortReason::Retry`], wait).
///
/// Only the engine creates `Abort` values.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Abort {
    reason: AbortReason,
}

impl Abort {
    pub(crate) fn new(reason: AbortReason) -> Self {
        Self { reason }
    }

    /// Why the attempt was aborted.
    pub fn reason(&self) -> AbortReason {
        self.reason
    }
}

impl fmt::Debug for Abort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Abort({})", self.reason.name())
    }
}

impl fmt::Display for Abort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "transaction aborted ({})", self.reason.name())
    }
}

impl std::error::Error for Abort {}
