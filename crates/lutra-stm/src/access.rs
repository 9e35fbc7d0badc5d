//! Transactional reads and writes, conflicts and snapshot validation (time-based, as
//! in TL2 and tinySTM's LSA: a global clock gives every commit a timestamp and every
//! attempt a snapshot `rv`).
//!
//! # Protocol: read of the word at `a`, guarded by record `r`
//! 1. A buffered write that covers the whole word answers directly.
//! 2. Load `r` (acquire). Locked by this attempt: memory is stable, load it. Locked by
//!    another: ask the contention manager, then start again.
//! 3. Unlocked at version `v`: load the word, acquire fence, load `r` again; if it
//!    changed, start again (seqlock read).
//! 4. Record `(r, v)`. If `v > rv`, extend the snapshot: read the clock, validate every
//!    recorded read (including this one); on success `rv` becomes that clock value,
//!    otherwise abort with `Validation`. Hence every value returned is consistent
//!    with the snapshot `rv` (opacity), even in an attempt that later aborts.
//!
//! # Protocol: conflicts
//! An irrevocable attempt always wins: it kills the holder and waits. Any attempt gives
//! way to an irrevocable holder by waiting. Otherwise the contention manager decides:
//! abort self, kill the holder (CAS of its status word, then wait for the record), or
//! wait. Waiting re-checks the own status each round, so a waiter that is killed
//! aborts and releases what it holds. A wait is for the holder's attempt seen when the
//! conflict was settled: it ends when the record is released or when the holder's slot
//! moves to another attempt (which may have locked the record again, for a transaction
//! the manager would judge differently); the conflict is then settled afresh.

use crate::abort::{Abort, AbortReason};
use crate::cm::{Resolution, TxView};
use crate::descriptor::Core;
use crate::epoch::Release;
use crate::orec::LockWord;
use crate::registry::{Status, TxState};
use crate::sets::{ReadEntry, WriteEntry};
use crate::stm::StmInner;
use crate::sync::{Ordering, fence};
use std::sync::atomic::AtomicUsize;

/// Which access met the conflict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

impl Access {
    fn abort_reason(self) -> AbortReason {
        match self {
            Self::Read => AbortReason::ReadConflict,
            Self::Write => AbortReason::WriteConflict,
        }
    }
}

/// The word at `addr`, seen as an atomic.
///
/// # Safety
/// `addr` must be aligned and valid for as long as the returned reference is used.
unsafe fn word<'a>(addr: usize) -> &'a AtomicUsize {
    // SAFETY: the caller guarantees alignment and validity; transactional words are
    // only accessed atomically while transactions may use them.
    unsafe { &*(addr as *const AtomicUsize) }
}

/// How often (in reads) the published size is refreshed for contention managers.
const PUBLISH_EVERY: u32 = 16;

impl Core {
    #[inline]
    pub(crate) fn load(&mut self, stm: &StmInner, addr: usize) -> Result<usize, Abort> {
        self.check_usable(stm)?;
        let buffered = self.writes.get(addr).copied();
        if let Some(entry) = buffered
            && entry.mask == usize::MAX
        {
            return Ok(entry.value);
        }
        let merge = |memory: usize| buffered.map_or(memory, |entry| entry.merged_with(memory));
        let orec = stm.orecs.index_of(addr);
        let record = stm.orecs.record(orec);
        loop {
            let before = record.load(Ordering::Acquire);
            match LockWord::decode(before) {
                LockWord::Locked { owner } if owner == self.slot => {
                    // SAFETY: the caller of `TxDescriptor::load` vouched for `addr`; we
                    // own its record, so no one else writes it now.
                    return Ok(merge(unsafe { word(addr) }.load(Ordering::Relaxed)));
                }
                LockWord::Locked { owner } => {
                    self.resolve_conflict(stm, owner, orec, Access::Read)?
                }
                LockWord::Unlocked { version } => {
                    // SAFETY: as above.
                    let value = unsafe { word(addr) }.load(Ordering::Relaxed);
                    // ORDERING: pairs with the release fence before write-back in
                    // `commit.rs`: if the value came from a newer commit, the second
                    // load of the record sees that commit's lock or version.
                    fence(Ordering::Acquire);
                    if record.load(Ordering::Relaxed) != before {
                        continue;
                    }
                    self.record_read(stm, orec, version)?;
                    return Ok(merge(value));
                }
            }
        }
    }

    #[inline]
    fn record_read(&mut self, stm: &StmInner, orec: usize, version: u64) -> Result<(), Abort> {
        self.reads.push(ReadEntry { orec, version });
        if version > self.rv {
            self.extend(stm)?;
        }
        self.reads_since_publish += 1;
        if self.reads_since_publish >= PUBLISH_EVERY {
            self.reads_since_publish = 0;
            self.publish_size(stm)?;
        }
        Ok(())
    }

    fn publish_size(&mut self, stm: &StmInner) -> Result<(), Abort> {
        let size = self.reads.len() + self.writes.len();
        if size > stm.config.max_set_entries {
            return Err(self.doom(AbortReason::Capacity));
        }
        stm.registry
            .get(self.slot)
            .size
            .store(size, Ordering::Relaxed);
        Ok(())
    }

    pub(crate) fn store(
        &mut self,
        stm: &StmInner,
        addr: usize,
        value: usize,
        mask: usize,
        retire_old: Option<Release>,
    ) -> Result<(), Abort> {
        self.check_usable(stm)?;
        if self.writes.update(addr, value, mask) {
            return Ok(());
        }
        let orec = stm.orecs.index_of(addr);
        stm.design.before_first_write(stm, self, orec)?;
        self.writes.insert(WriteEntry {
            addr,
            value: value & mask,
            mask,
            retire_old,
        });
        self.publish_size(stm)
    }

    /// Locks record `orec` for this attempt (waiting or aborting as the contention
    /// manager decides when another holds it). Returns the version the record had
    /// when this attempt locked it.
    pub(crate) fn acquire(&mut self, stm: &StmInner, orec: usize) -> Result<u64, Abort> {
        let record = stm.orecs.record(orec);
        loop {
            let current = record.load(Ordering::Acquire);
            match LockWord::decode(current) {
                LockWord::Locked { owner } if owner == self.slot => {
                    return Ok(self.locks.version_before(orec).unwrap_or(0));
                }
                LockWord::Locked { owner } => {
                    self.resolve_conflict(stm, owner, orec, Access::Write)?
                }
                LockWord::Unlocked { version } => {
                    let mine = LockWord::locked(self.slot);
                    if record
                        .compare_exchange(current, mine, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                    {
                        self.locks.push(orec, version);
                        return Ok(version);
                    }
                }
            }
        }
    }

    /// Settles a conflict over `orec`, held by `owner`. `Ok` means: look again.
    #[cold]
    fn resolve_conflict(
        &mut self,
        stm: &StmInner,
        owner: usize,
        orec: usize,
        access: Access,
    ) -> Result<(), Abort> {
        let enemy = stm.registry.get(owner);
        let enemy_status = enemy.status();
        if stm.orecs.record(orec).load(Ordering::SeqCst) != LockWord::locked(owner) {
            return Ok(());
        }
        let resolution = if self.irrevocable {
            Resolution::KillOther
        } else if enemy_status.irrevocable {
            Resolution::Wait
        } else {
            let me = self.view();
            let other = TxView {
                priority: enemy.priority.load(Ordering::Relaxed) as i64,
                size: enemy.size.load(Ordering::Relaxed),
                age: enemy.age.load(Ordering::Relaxed),
                slot: owner,
            };
            stm.config.manager.resolve(&me, &other)
        };
        match resolution {
            Resolution::AbortSelf => Err(self.doom(access.abort_reason())),
            Resolution::KillOther => {
                if enemy_status.state == TxState::Active && !enemy_status.irrevocable {
                    enemy.kill(enemy_status, (self.slot, self.status.serial));
                }
                self.wait_for_release(stm, orec, owner, enemy_status)
            }
            Resolution::Wait => self.wait_for_release(stm, orec, owner, enemy_status),
        }
    }

    fn view(&self) -> TxView {
        TxView {
            priority: self.options.priority,
            size: self.reads.len() + self.writes.len(),
            age: self.age,
            slot: self.slot,
        }
    }

    /// Waits until `owner` no longer holds `orec`, aborting if this attempt is killed.
    /// Stops waiting as soon as `owner` is in another attempt than `seen` (its status
    /// when the conflict was settled): the record may have been released and locked
    /// again by the same slot for another transaction, which the caller must settle
    /// afresh. Waiting on it blindly deadlocks when that transaction waits for this
    /// one (say a younger one under `Timestamp`).
    fn wait_for_release(
        &mut self,
        stm: &StmInner,
        orec: usize,
        owner: usize,
        seen: Status,
    ) -> Result<(), Abort> {
        let record = stm.orecs.record(orec);
        let enemy = stm.registry.get(owner);
        stm.try_wait_until(|| {
            if record.load(Ordering::Acquire) != LockWord::locked(owner)
                || enemy.status().serial != seen.serial
            {
                return Ok(true);
            }
            self.check_usable(stm).map(|()| false)
        })?;
        self.check_usable(stm)
    }

    /// Whether every recorded read still holds (records locked by this attempt are
    /// checked against the version they had when locked).
    pub(crate) fn validate(&self, stm: &StmInner) -> bool {
        self.reads.iter().all(|read| {
            match LockWord::decode(stm.orecs.record(read.orec).load(Ordering::Acquire)) {
                LockWord::Unlocked { version } => version == read.version,
                LockWord::Locked { owner } if owner == self.slot => {
                    self.locks.version_before(read.orec) == Some(read.version)
                }
                LockWord::Locked { .. } => false,
            }
        })
    }

    /// Moves the snapshot to the current clock if every read still holds.
    pub(crate) fn extend(&mut self, stm: &StmInner) -> Result<(), Abort> {
        let now = stm.clock.load(Ordering::SeqCst);
        if self.validate(stm) {
            self.rv = now;
            Ok(())
        } else {
            Err(self.doom(AbortReason::Validation))
        }
    }
}
