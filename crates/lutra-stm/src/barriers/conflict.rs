//! Conflicts, locking and snapshot validation: what the barriers (`access.rs`) and
//! the commit (`commit.rs`) call when a record is locked by another attempt, when
//! this attempt locks one, and when its snapshot must be checked or extended.
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

use crate::attempt::abort::{Abort, AbortReason};
use crate::attempt::descriptor::Core;
use crate::cm::{Resolution, TxView};
use crate::global::orec::LockWord;
use crate::global::registry::{SharedDescriptor, Status, TxState};
use crate::global::stm::StmInner;
use crate::global::sync::Ordering;

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

/// How many rounds of the engine's `pause` (spinning first, then yielding) a
/// transaction that meets a record locked by a committing one waits for it before it
/// asks the contention manager (tinySTM waits the same way): a committer past its
/// point of no return only validates and writes back, so the record is normally free
/// within a few hundred cycles, and neither aborting nor killing (which fails on a
/// committing attempt) would help.
const COMMITTER_ROUNDS: u32 = 72;

/// Waits a bounded short while for `owner`'s committing attempt `seen` to release
/// `record`; true if it did (or moved on to another attempt): look again.
#[cold]
fn wait_for_committer(
    stm: &StmInner,
    record: &crate::global::sync::Record,
    owner: usize,
    enemy: &SharedDescriptor,
    seen: Status,
) -> bool {
    for round in 0..COMMITTER_ROUNDS {
        stm.pause(round);
        if record.load(Ordering::Acquire) != LockWord::locked(owner)
            || enemy.status().serial() != seen.serial()
        {
            return true;
        }
    }
    false
}

impl Core {
    /// Locks record `orec` for this attempt (waiting or aborting as the contention
    /// manager decides when another holds it). Returns the version the record had
    /// when this attempt locked it.
    #[inline]
    pub(crate) fn acquire(&mut self, stm: &StmInner, orec: usize) -> Result<u64, Abort> {
        self.lock_record::<true>(stm, orec)
    }

    /// [`Core::acquire`] for a commit's locking of its write set, which needs no
    /// version: a record this attempt holds already (a word of its granule was
    /// written before) costs a load, not a look-up in the lock set.
    #[inline]
    pub(crate) fn acquire_for_commit(&mut self, stm: &StmInner, orec: usize) -> Result<(), Abort> {
        self.lock_record::<false>(stm, orec).map(drop)
    }

    /// Locks `orec` as [`Core::acquire`] says; the version of a record held already is
    /// looked up only if `VERSION_OF_HELD` (0 otherwise).
    #[inline(always)]
    fn lock_record<const VERSION_OF_HELD: bool>(
        &mut self,
        stm: &StmInner,
        orec: usize,
    ) -> Result<u64, Abort> {
        let record = stm.orecs.record(orec);
        loop {
            let current = record.load(Ordering::Acquire);
            match LockWord::decode(current) {
                LockWord::Locked { owner } if owner == self.slot => {
                    if !VERSION_OF_HELD {
                        return Ok(0);
                    }
                    return Ok(self.locks.version_before(orec).unwrap_or(0));
                }
                LockWord::Locked { owner } => {
                    self.resolve_conflict(stm, owner, orec, Access::Write)?
                }
                LockWord::Unlocked { version } => {
                    if self.locks.is_empty() {
                        // ORDERING: the release half of the compare-and-swap below
                        // publishes them to whoever finds the record locked.
                        self.publish_age_and_priority(stm);
                    }
                    let mine = LockWord::locked(self.slot);
                    if record
                        .compare_exchange(current, mine, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                    {
                        self.locks.push(orec, version);
                        // Holding a lock, this attempt can be killed: every access
                        // checks its status word from now on (`check_usable`).
                        self.reads.close();
                        return Ok(version);
                    }
                }
            }
        }
    }

    /// Settles a conflict over `orec`, held by `owner`. `Ok` means: look again.
    #[cold]
    pub(crate) fn resolve_conflict(
        &mut self,
        stm: &StmInner,
        owner: usize,
        orec: usize,
        access: Access,
    ) -> Result<(), Abort> {
        let enemy = stm.registry.get(owner);
        let enemy_status = enemy.status();
        let record = stm.orecs.record(orec);
        if record.load(Ordering::SeqCst) != LockWord::locked(owner) {
            return Ok(());
        }
        if enemy_status.state() == TxState::Committing
            && wait_for_committer(stm, record, owner, enemy, enemy_status)
        {
            return Ok(());
        }
        self.publish_size(stm)?;
        let resolution = if self.mode().is_irrevocable() {
            Resolution::KillOther
        } else if enemy_status.irrevocable() {
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
                if enemy_status.state() == TxState::Active && !enemy_status.irrevocable() {
                    enemy.kill(enemy_status, (self.slot, self.status.serial()));
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
                || enemy.status().serial() != seen.serial()
            {
                return Ok(true);
            }
            self.check_usable(stm).map(|()| false)
        })?;
        self.check_usable(stm)
    }

    /// Whether every recorded read still holds (records locked by this attempt are
    /// checked against the version they had when locked: the first such read
    /// indexes the lock set, see `LockSet`).
    pub(crate) fn validate(&mut self, stm: &StmInner) -> bool {
        let (reads, locks, slot) = (&self.reads, &mut self.locks, self.slot);
        reads.as_slice().iter().all(|read| {
            match LockWord::decode(stm.orecs.record(read.orec).load(Ordering::Acquire)) {
                LockWord::Unlocked { version } => version == read.version,
                LockWord::Locked { owner } if owner == slot => {
                    locks.version_before(read.orec) == Some(read.version)
                }
                LockWord::Locked { .. } => false,
            }
        })
    }

    /// Moves the snapshot to the current clock if every read still holds.
    pub(crate) fn extend(&mut self, stm: &StmInner) -> Result<(), Abort> {
        // A read-only attempt recorded nothing to validate (`read_only.rs`).
        if self.mode().is_unrecorded() {
            return Err(self.doom(AbortReason::Snapshot));
        }
        let now = stm.clock.load(Ordering::SeqCst);
        if self.validate(stm) {
            self.rv = now;
            Ok(())
        } else {
            Err(self.doom(AbortReason::Validation))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cm::Suicide;
    use crate::global::orec::PerWord;
    use crate::global::parking::Parking;
    use crate::global::sync::data::AtomicUsize;
    use crate::{Config, Stm, TxDescriptor, TxOptions};
    use std::sync::{Arc, Mutex};
    use std::task::Waker;

    /// Parking whose first `yield_now` runs a scripted action: the moment at which a
    /// waiting transaction has spun and starts yielding.
    #[derive(Default)]
    struct ScriptedYield {
        on_yield: Mutex<Option<Box<dyn FnOnce() + Send>>>,
        yields: Mutex<u32>,
    }

    impl Parking for ScriptedYield {
        fn waker(&self) -> Waker {
            Waker::noop().clone()
        }
        fn park(&self) {}
        fn yield_now(&self) {
            *self.yields.lock().unwrap() += 1;
            if let Some(action) = self.on_yield.lock().unwrap().take() {
                action();
            }
        }
    }

    /// Commit-time locking: a reader that meets a record locked by a transaction past
    /// its point of no return waits for it instead of asking the contention manager
    /// (here `Suicide`, which would abort the reader). The committer "finishes" at the
    /// reader's first yield, so the interleaving is fixed, not left to timing.
    #[test]
    fn a_reader_waits_for_a_committing_owner_instead_of_aborting() {
        let parking = Arc::new(ScriptedYield::default());
        let stm = Stm::new(
            Config::default()
                .with_manager(Suicide)
                .with_parking(parking.clone()),
        );
        let mut word: usize = 7;
        let addr = &raw mut word as usize;
        let mut writer = TxDescriptor::new(&stm).unwrap();
        writer.begin(TxOptions::default());
        // SAFETY: `word` outlives both transactions and is only accessed through them.
        unsafe { writer.store(addr as *mut usize, 8, usize::MAX) }.unwrap();
        // The writer's commit, stopped after its point of no return: the record is
        // locked and the status says `Committing`.
        let inner = stm.inner.clone();
        let orec = inner.orecs.index_of::<PerWord>(addr);
        let version = writer.core.acquire(&inner, orec).unwrap();
        let shared = inner.registry.get(writer.core.slot);
        let committing = writer.core.status.with_state(TxState::Committing);
        shared.status.store(committing.encode(), Ordering::SeqCst);
        // At the reader's first yield the commit completes: write-back, then release
        // at a new version (inside the reader's snapshot, so no extension is needed).
        let finish = inner.clone();
        *parking.on_yield.lock().unwrap() = Some(Box::new(move || {
            // SAFETY: the record is locked for this write-back, as a commit does.
            unsafe { (*(addr as *const AtomicUsize)).store(8, Ordering::Relaxed) };
            finish
                .orecs
                .record(orec)
                .store(LockWord::unlocked(version), Ordering::Release);
        }));
        let mut reader = TxDescriptor::new(&stm).unwrap();
        reader.begin(TxOptions::default());
        // SAFETY: as above.
        let seen = unsafe { reader.load(addr as *const usize) };
        assert_eq!(seen, Ok(8), "the reader gave up on a committing owner");
        assert_eq!(*parking.yields.lock().unwrap(), 1);
        reader.commit().unwrap();
        shared.status.store(
            writer.core.status.with_state(TxState::Active).encode(),
            Ordering::SeqCst,
        );
        writer.core.locks.clear();
        writer.rollback(AbortReason::Explicit);
    }
}
