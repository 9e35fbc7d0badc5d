//! Commit and rollback of an attempt.
//!
//! # Protocol: commit of an attempt that wrote
//! 1. The design locks every written record (commit-time locking does it now).
//! 2. CAS the own status `Active → Committing`: the point of no return. Losing the CAS
//!    means a contention manager killed the attempt.
//! 3. If another descriptor holds the commit gate (an irrevocable transaction runs),
//!    roll back and wait for it before restarting.
//! 4. Take the write timestamp `wv` from the clock (fetch-add), and note whether any
//!    `retry` waiter is registered (`waiting.rs`). Unless `wv = rv + 1` (no commit
//!    happened since the snapshot) or the attempt is irrevocable, validate the read
//!    set.
//! 5. Release fence, then write back every buffered word (merging masked writes with
//!    memory) and retire the boxed values it replaces. A word written with mask 0 (a
//!    freed block's, written unchanged so that its record is locked and its version
//!    moves) is not stored: its line is left to whoever reads it.
//! 6. Release every record with version `wv`, go idle, wake the waiters of the written
//!    records if step 4 saw any, retire freed blocks through the epochs.
//!
//! A read-only attempt commits by going idle: it writes no shared metadata.
//!
//! Steps 1–6 are one function, [`Core::commit_writes`], run by two paths
//! ([`CommitPath`]) that differ in how they lock (step 1), what they do when something
//! stands in the way of steps 1–4 (an [`Obstacle`]) and how they end: the general
//! commit here (the design locks, an obstacle dooms and rolls back), and the straight
//! commit of `straight.rs` (one compare-and-swap per record, an obstacle undoes steps
//! 1–4 and hands over to the general commit).
//!
//! # Protocol: rollback
//! Release every held record with the version it had before (no commit happened, so
//! readers holding that version stay valid), hand back what the attempt allocated,
//! forget its writes and frees, go idle.

use crate::attempt::abort::{Abort, AbortReason};
use crate::attempt::descriptor::Core;
use crate::attempt::mode::Mode;
use crate::global::epoch::{COLLECT_THRESHOLD, Retired};
use crate::global::orec::LockWord;
use crate::global::registry::TxState;
use crate::global::stm::StmInner;
use crate::global::sync::data::AtomicUsize;
use crate::global::sync::{Ordering, fence};
use crate::sets::keyed::KEPT_CAPACITY;
use crate::sets::write_set::WordMap;

/// What stood in the way of a commit's steps 1–4.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Obstacle {
    /// Step 1: a written record could not be locked, for the reason given.
    Lock(Abort),
    /// Step 2: a contention manager killed the attempt.
    Killed,
    /// Step 3: another descriptor holds the commit gate.
    Gate,
    /// Step 4: a read no longer holds.
    Validation,
}

impl Obstacle {
    /// Whether the status word had been set committing when it was met.
    #[inline(always)]
    pub(crate) fn after_status_set(self) -> bool {
        matches!(self, Self::Gate | Self::Validation)
    }
}

/// A way to run the commit protocol ([`Core::commit_writes`]): the general commit
/// ([`GeneralCommit`]) or the straight one (`straight.rs`).
pub(crate) trait CommitPath {
    /// What the commit returns.
    type Output;
    /// Whether the attempt may be irrevocable (steps 3 and 4 then do not apply); a
    /// path whose attempts never are skips the test.
    const MAY_BE_IRREVOCABLE: bool;
    /// Whether the path's attempts are always straight or `Blocks` (`mode.rs`): none
    /// of their writes replaces a boxed value, so step 5 takes the plain write-back
    /// without a test of the mode.
    const STRAIGHT: bool;
    /// Step 1: locks every written record (or makes sure they are locked).
    fn lock_writes(core: &mut Core, stm: &StmInner) -> Result<(), Abort>;
    /// Something stood in the way of steps 1–4: the status word reads committing
    /// if [`Obstacle::after_status_set`], and `Core::status` is the active word.
    fn stopped(core: &mut Core, stm: &StmInner, obstacle: Obstacle) -> Self::Output;
    /// The end of a commit whose steps 5 and 6 are done.
    fn committed(core: &mut Core, stm: &StmInner) -> Self::Output;
}

/// The general commit: the design locks (waiting, killing or aborting as the
/// contention manager decides); an obstacle dooms the attempt and rolls it back.
pub(crate) struct GeneralCommit;

impl CommitPath for GeneralCommit {
    type Output = Result<(), Abort>;
    const MAY_BE_IRREVOCABLE: bool = true;
    const STRAIGHT: bool = false;

    #[inline(always)]
    fn lock_writes(core: &mut Core, stm: &StmInner) -> Result<(), Abort> {
        stm.lock_write_set(core)
    }

    fn stopped(core: &mut Core, stm: &StmInner, obstacle: Obstacle) -> Result<(), Abort> {
        let abort = match obstacle {
            // The design doomed the attempt already.
            Obstacle::Lock(abort) => abort,
            Obstacle::Killed => core.doom(AbortReason::Killed),
            Obstacle::Gate => core.doom(AbortReason::Irrevocable),
            Obstacle::Validation => core.doom(AbortReason::Validation),
        };
        core.rollback(stm, abort.reason());
        Err(abort)
    }

    #[inline(always)]
    fn committed(core: &mut Core, stm: &StmInner) -> Result<(), Abort> {
        core.finish_committed(stm);
        Ok(())
    }
}

impl Core {
    /// Commits the attempt. A straight one (see `mode.rs`: active, not doomed, holds
    /// no lock before this) commits inline when it wrote nothing, and otherwise on
    /// the straight path (`straight.rs`), or, when that gives up, through the protocol
    /// above without the usability check; every other goes through
    /// [`Core::commit_special`].
    #[inline]
    pub(crate) fn commit(&mut self, stm: &StmInner) -> Result<(), Abort> {
        if !self.mode().is_straight() {
            return self.commit_special(stm);
        }
        debug_assert!(self.doomed.is_none() && self.locks.is_empty());
        if self.writes.is_empty() {
            let solo = self.mode().is_solo();
            self.finish_straight(stm, solo);
            return Ok(());
        }
        if self.try_commit_update(stm) {
            return Ok(());
        }
        self.commit_update_or_roll_back(stm)
    }

    #[cold]
    #[inline(never)]
    fn commit_special(&mut self, stm: &StmInner) -> Result<(), Abort> {
        if let Err(abort) = self.check_usable(stm) {
            self.rollback(stm, abort.reason());
            return Err(abort);
        }
        if self.mode().is_solo() {
            self.finish_committed(stm);
            return Ok(());
        }
        if self.mode() == Mode::Blocks && self.commit_blocks(stm) {
            return Ok(());
        }
        if self.writes.is_empty() {
            if self.mode() == Mode::ReadOnlyStraight {
                self.commit_read_only_straight(stm);
                return Ok(());
            }
            if !self.allocations.is_empty() {
                self.release_unpublished_values(&WordMap::default());
            }
            // Blocks freed without a word written (a size of 0) are retired too.
            self.finish_committed(stm);
            return Ok(());
        }
        self.commit_update_or_roll_back(stm)
    }

    /// The general commit of an attempt that wrote: the protocol through
    /// [`GeneralCommit`], which rolls the attempt back when something stands in its
    /// way.
    fn commit_update_or_roll_back(&mut self, stm: &StmInner) -> Result<(), Abort> {
        self.commit_writes::<GeneralCommit>(stm)
    }

    /// Steps 1–6 of the protocol (see the module header), the same for every path:
    /// `P` locks (step 1), meets what stands in the way of steps 1–4, and ends.
    /// The status word reads committing from step 2 on, but `Core::status` keeps the
    /// active word until the point of no return is passed for good, so that a path
    /// that gives up can set it back.
    #[inline(always)]
    pub(crate) fn commit_writes<P: CommitPath>(&mut self, stm: &StmInner) -> P::Output {
        // Step 1.
        if let Err(abort) = P::lock_writes(self, stm) {
            return P::stopped(self, stm, Obstacle::Lock(abort));
        }
        // Step 2: the point of no return, unless the path undoes it.
        let shared = self.shared(stm);
        let active = self.status;
        let committing = active.with_state(TxState::Committing);
        if shared
            .status
            .compare_exchange(
                active.encode(),
                committing.encode(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_err()
        {
            return P::stopped(self, stm, Obstacle::Killed);
        }
        let irrevocable = P::MAY_BE_IRREVOCABLE && self.mode().is_irrevocable();
        // Step 3.
        if !irrevocable && stm.gate.closed_by_other(self.slot) {
            return P::stopped(self, stm, Obstacle::Gate);
        }
        // Step 4.
        let write_version = stm.clock.fetch_add(1, Ordering::SeqCst) + 1;
        // Step 1 of the wait table's committer (`waiting.rs`): every written record is
        // locked by now.
        let waiters = stm.waits.has_waiters();
        if write_version != self.rv + 1 && !irrevocable && !self.validate(stm) {
            return P::stopped(self, stm, Obstacle::Validation);
        }
        self.status = committing;
        // Steps 5 and 6.
        self.write_back_and_release(stm, write_version, waiters, P::STRAIGHT);
        P::committed(self, stm)
    }

    /// Steps 5 and 6 up to the end: writes every buffered word back, releases every
    /// held record with version `write_version`, and wakes the waiters of the written
    /// records if step 4 saw any (`waiters`). `straight`: the attempt is straight
    /// or `Blocks`, known without a test of its mode.
    #[inline(always)]
    pub(crate) fn write_back_and_release(
        &mut self,
        stm: &StmInner,
        write_version: u64,
        waiters: bool,
        straight: bool,
    ) {
        self.write_back(stm, straight);
        for held in self.locks.held() {
            stm.orecs
                .record(held.orec)
                .store(LockWord::unlocked(write_version), Ordering::Release);
        }
        if waiters {
            stm.waits
                .notify_writes(self.locks.held().iter().map(|held| held.orec));
        }
    }

    /// Step 6's end for a committed attempt (one that wrote, a solo one, or one whose
    /// frees wrote no word): blocks it freed go to the limbo list ([`Core::retire_frees`]), then it ends.
    #[inline]
    fn finish_committed(&mut self, stm: &StmInner) {
        if !self.frees.is_empty() {
            self.retire_frees(stm);
        }
        self.finish(stm, Ok(()));
        self.collect_limbo_if_due(stm);
    }

    /// Releases what the limbo list may release if it is due: once it has grown
    /// past [`COLLECT_THRESHOLD`] blocks.
    #[inline(always)]
    pub(crate) fn collect_limbo_if_due(&mut self, stm: &StmInner) {
        if self.limbo.len() >= COLLECT_THRESHOLD {
            self.collect_limbo(stm);
        }
    }

    /// Blocks freed by the committed attempt go to the limbo list, to be released once
    /// no transaction can still read them. Its records are released already (epoch
    /// protocol, step 2: the fence of `current_for_retire` follows them); the list of
    /// frees is emptied in place, keeping its buffer for the next attempt unless it
    /// grew past what the sets keep.
    pub(crate) fn retire_frees(&mut self, stm: &StmInner) {
        let epoch = stm.epochs.current_for_retire();
        self.limbo.extend(self.frees.drain(..).map(|block| Retired {
            epoch,
            addr: block.addr,
            size: block.size,
            release: block.release,
        }));
        if self.frees.capacity() > KEPT_CAPACITY {
            self.frees = Vec::new();
        }
    }

    /// Releases what the limbo list may release: called where the list grows (at
    /// commit), so that a straight attempt's end need not look at it.
    #[cold]
    fn collect_limbo(&mut self, stm: &StmInner) {
        stm.epochs.collect(&stm.registry, &mut self.limbo);
    }

    /// Step 5: writes every buffered word to memory. `straight`: the attempt is
    /// straight or `Blocks`, known without a test of its mode.
    #[inline]
    fn write_back(&mut self, stm: &StmInner, straight: bool) {
        // ORDERING: pairs with the acquire fence of the read protocol in `access.rs`:
        // a reader that loads a written value also sees this attempt's lock.
        fence(Ordering::Release);
        if !straight && !self.mode().is_straight() {
            self.write_back_replacing(stm);
            return;
        }
        // Straight (or `Blocks`): no write replaces a boxed value, nothing was
        // allocated for one.
        for entry in self
            .writes
            .entries()
            .iter()
            .filter(|entry| entry.writes_bytes())
        {
            // SAFETY: the program vouched for every written address when it stored to
            // it, and this attempt holds the record guarding it.
            entry.store_into(unsafe { &*(entry.addr as *const AtomicUsize) });
        }
    }

    /// [`Core::write_back`] of an attempt that may replace boxed values (retired once
    /// no transaction can read them) or hold values it allocated and did not publish.
    #[cold]
    #[inline(never)]
    fn write_back_replacing(&mut self, stm: &StmInner) {
        let mut published = WordMap::default();
        let mut replaced = Vec::new();
        for entry in self.writes.entries() {
            // SAFETY: the program vouched for every written address when it stored to
            // it, and this attempt holds the record guarding it.
            let word = unsafe { &*(entry.addr as *const AtomicUsize) };
            let old = word.load(Ordering::Relaxed);
            if entry.writes_bytes() {
                word.store(entry.merged_with(old), Ordering::Relaxed);
            }
            if let Some(release) = entry.retire_old {
                published.insert(entry.value, ());
                replaced.push((old, release));
            }
        }
        if !self.allocations.is_empty() {
            self.release_unpublished_values(&published);
        }
        if !replaced.is_empty() {
            let epoch = stm.epochs.current_for_retire();
            self.limbo
                .extend(replaced.into_iter().map(|(addr, release)| Retired {
                    epoch,
                    addr,
                    size: 0,
                    release,
                }));
        }
    }

    /// Hands back the boxed `TVar` values this attempt allocated but did not publish
    /// (overwritten by a later write of the same attempt).
    fn release_unpublished_values(&mut self, published: &WordMap<()>) {
        for block in self.allocations.iter().filter(|block| block.tvar_value) {
            if !published.contains_key(&block.addr) {
                // SAFETY: allocated by this attempt and never made visible to others.
                unsafe { (block.release)(block.addr, block.size) };
            }
        }
    }

    pub(crate) fn rollback(&mut self, stm: &StmInner, reason: AbortReason) {
        if !self.mode().is_active() {
            return;
        }
        for &[addr, old] in self.solo_undo.entries().iter().rev() {
            // SAFETY: a solo attempt's own write (`store_solo`, or a store logged in
            // the window by the caller, whose address it vouched for), undone while it
            // is still alone in the engine.
            unsafe { &*(addr as *const AtomicUsize) }.store(old, Ordering::Relaxed);
        }
        self.release_unchanged(stm);
        for block in &self.allocations {
            // SAFETY: allocated by this attempt; its writes are discarded, so nothing
            // committed refers to the block.
            unsafe { (block.release)(block.addr, block.size) };
        }
        self.finish(stm, Err(reason));
    }

    /// Releases every record the attempt holds with the version it had before (no
    /// commit happened, so readers holding that version stay valid) and empties the
    /// lock set.
    pub(crate) fn release_unchanged(&mut self, stm: &StmInner) {
        for held in self.locks.held() {
            stm.orecs
                .record(held.orec)
                .store(LockWord::unlocked(held.version), Ordering::Release);
        }
        self.locks.clear();
    }
}
