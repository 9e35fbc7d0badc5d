//! Read-only attempts: the program's hint that a transaction only reads
//! ([`TxOptions::read_only`](crate::TxOptions), tinySTM's `read_only` attribute,
//! libitm's `pr_readOnly`), taken as tinySTM takes it: the attempt keeps no read set.
//! A long reader (a bank's audit of 4,096 accounts) then writes no 64 KiB of entries
//! per attempt, the first-level cache misses that dominated it.
//!
//! # Protocol: a read-only attempt
//! 1. Begins as any instrumented attempt (announced, snapshot `rv` from the clock), in
//!    mode `ReadOnlyStraight` or `ReadOnly` (`mode.rs`). Its read set is closed: the
//!    inlined read records nothing, and every write takes `store_slow`.
//! 2. A read loads the record, then the word, then the record again (the seqlock read
//!    of `access.rs`); an unlocked record at a version within `rv`, unchanged across
//!    the load, gives the value. Nothing is recorded. A record locked by another
//!    attempt goes to the contention manager, as any read's. A version newer than
//!    `rv` aborts the attempt with [`AbortReason::Snapshot`]: with nothing recorded
//!    there is nothing to validate, so the snapshot cannot be extended.
//! 3. Every value returned is so consistent with the memory at `rv` (opacity), and
//!    the commit has nothing to check: the attempt goes idle, as any read-only
//!    attempt does (`ReadOnlyStraight` through one call,
//!    [`Core::commit_read_only_straight`]; the straight end inlined in the C ABI's
//!    `stm_commit` tells a solo attempt by its closed read set, so it is not taken).
//! 4. Whatever needs a read or write set — a write (or a free), a `retry` (which waits
//!    on what was read), becoming irrevocable (which validates what was read), an
//!    extension — dooms the attempt with [`AbortReason::NotReadOnly`] before it has
//!    any effect, and the transaction runs again recorded.
//!
//! # Protocol: which attempts are read-only
//! The first [`READ_ONLY_ATTEMPTS`] attempts of a transaction begun with the hint
//! run read-only (`Escalation::ReadOnly`, set by `prepare` and again after each of
//! their aborts while some are left); every later attempt keeps a read set, so that
//! it can extend its snapshot and finish beside writers that commit during each of
//! its attempts (and, should it keep losing, the irrevocable fallback of
//! `fallback.rs` takes over as for any transaction). An abort with `NotReadOnly`, or
//! an irrevocable or solo start, ends the read-only attempts of the transaction.
//!
//! # Invariants
//! - A read-only attempt holds no lock, has an empty write set and an empty read set.
//! - Once an attempt of a transaction keeps a read set, every later one does.

use crate::attempt::abort::{Abort, AbortReason};
use crate::attempt::descriptor::Core;
use crate::attempt::mode::{Escalation, Mode};
use crate::barriers::access::word;
use crate::barriers::conflict::Access;
use crate::global::orec::{LockWord, RecordMapping};
use crate::global::stm::StmInner;
use crate::global::sync::{Ordering, fence};

/// How many attempts of a transaction begun with the read-only hint run without a read
/// set before the next keeps one. One: a reader long enough to meet a newer version
/// once will most likely meet one again (the writers that overtook it keep
/// committing), and its second attempt, recorded, extends past them instead; a short
/// reader rarely aborts at all. Measured in `docs/performance.md` (the read-only hint).
pub(crate) const READ_ONLY_ATTEMPTS: u8 = 1;

impl Core {
    /// Takes the transaction's read-only escalation for the attempt that begins now:
    /// true if it is to run read-only. The escalation is spent either way, and so is
    /// one of the transaction's read-only attempts; an attempt that cannot run
    /// read-only (`irrevocable`, or solo) ends them.
    #[inline]
    pub(crate) fn take_read_only(&mut self, irrevocable: bool, solo: bool) -> bool {
        if self.escalation != Escalation::ReadOnly {
            return false;
        }
        self.escalation = Escalation::None;
        if irrevocable || solo {
            self.read_only_left = 0;
            return false;
        }
        self.read_only_left -= 1;
        true
    }

    /// Makes the attempt just announced read-only (step 1 of the protocol): straight
    /// when `straight`.
    #[inline(always)]
    pub(crate) fn start_read_only(&mut self, straight: bool) {
        debug_assert!(self.writes.is_empty() && self.reads.len() == 0 && self.locks.is_empty());
        self.reads.close();
        self.set_mode(if straight {
            Mode::ReadOnlyStraight
        } else {
            Mode::ReadOnly
        });
    }

    /// After an abort for `reason` (already counted): whether the next attempt runs
    /// read-only (see the module's protocol). Before the fallback decides, which may
    /// override it.
    pub(crate) fn choose_read_only(&mut self, reason: AbortReason) {
        if reason == AbortReason::NotReadOnly {
            self.read_only_left = 0;
        }
        // `read_only_left` is the hinted transaction's own: a later one without the
        // hint may find it stale.
        if self.options.read_only && self.read_only_left > 0 && self.escalation == Escalation::None
        {
            self.escalation = Escalation::ReadOnly;
        }
    }

    /// The read of a read-only attempt's inlined path (step 2 of the protocol): the
    /// word at `addr` (whose index is `index`) if its record is unlocked at a version
    /// within the snapshot and stays so across the load, else `None` (nothing done:
    /// [`Core::load_unrecorded_slow`] decides).
    #[inline(always)]
    pub(crate) fn load_unrecorded<M: RecordMapping>(
        &mut self,
        addr: usize,
        index: usize,
    ) -> Option<usize> {
        self.load_at_snapshot::<M>(addr, index)
            .map(|(value, _, _)| value)
    }

    /// Step 2 of the protocol in full, for what [`Core::load_unrecorded`] leaves: a
    /// locked record (the contention manager), a newer version (the abort).
    #[cold]
    #[inline(never)]
    pub(crate) fn load_unrecorded_slow<M: RecordMapping>(
        &mut self,
        stm: &StmInner,
        addr: usize,
    ) -> Result<usize, Abort> {
        self.check_usable(stm)?;
        let orec = stm.orecs.index_of::<M>(addr);
        let record = stm.orecs.record(orec);
        loop {
            let before = record.load(Ordering::Acquire);
            match LockWord::decode(before) {
                // A read-only attempt locks nothing: the holder is another attempt.
                LockWord::Locked { owner } => {
                    self.resolve_conflict(stm, owner, orec, Access::Read)?
                }
                LockWord::Unlocked { version } if version > self.rv => {
                    return Err(self.doom(AbortReason::Snapshot));
                }
                LockWord::Unlocked { .. } => {
                    // SAFETY: the caller of `TxDescriptor::load` vouched for `addr`.
                    let value = unsafe { word(addr) }.load(Ordering::Relaxed);
                    // ORDERING: as in `load_slow` (the seqlock read).
                    fence(Ordering::Acquire);
                    if record.load(Ordering::Relaxed) == before {
                        return Ok(value);
                    }
                }
            }
        }
    }

    /// The commit of a `ReadOnlyStraight` attempt (step 3 of the protocol): what the
    /// straight end does for an instrumented attempt that wrote nothing.
    #[inline]
    pub(crate) fn commit_read_only_straight(&mut self, stm: &StmInner) {
        debug_assert!(self.mode() == Mode::ReadOnlyStraight && self.doomed.is_none());
        debug_assert!(self.writes.is_empty() && self.locks.is_empty() && self.started_at.is_none());
        self.allocations.clear();
        self.go_idle(stm);
        self.set_mode(Mode::Settled);
    }

    /// What dooms a read-only attempt that asks for something needing its sets (step
    /// 4 of the protocol): `Some(abort)` if the attempt is read-only.
    #[inline]
    pub(crate) fn refuse_if_read_only(&mut self) -> Option<Abort> {
        self.mode()
            .is_unrecorded()
            .then(|| self.doom(AbortReason::NotReadOnly))
    }
}
