//! The straight paths of a transaction's begin and end: [`TxDescriptor::try_begin`]
//! and [`TxDescriptor::try_commit`], the straight cases of `begin` and `commit` for a
//! driver that keeps its own general path out of line. The C ABI's `stm_start` and
//! `stm_commit` try these first and tail-call their general path otherwise, so that
//! their straight case needs no stack frame.
//!
//! # Invariants
//! - `try_begin` does what `begin(TxOptions::site(site))` does, when the engine has
//!   neither hooks nor statistics (`StmInner::straight_ends`) and the last transaction
//!   left nothing to give way to — which one mode, `Mode::Settled` (`mode.rs`),
//!   tells: taken by a commit of a transaction without aborts, left by every begin,
//!   doom and `prepare`. The attempt it begins is straight (`Mode::Straight` or
//!   `Mode::SoloStraight`).
//!   When it returns `false` the descriptor is as it was: between transactions, its
//!   epoch not announced, its status word idle (a serial it took is simply skipped).
//!   `try_begin_read_only` is the same function (monomorphised) for
//!   `TxOptions { read_only: true, .. }`: its instrumented attempt is
//!   `Mode::ReadOnlyStraight` (`read_only.rs`), which `try_commit_after_inline`
//!   commits through one call.
//! - `try_commit` does what `commit` does for a straight attempt with nothing to write
//!   back (it read only, or it ran solo: its writes are already in memory); when it
//!   returns `false` the attempt runs on untouched.
//! - `Core::try_commit_update` does what `commit` does for a straight attempt that wrote
//!   (straight implies commit-time locking: encounter-time locking makes an attempt not
//!   straight at its first write), when nothing stands in its way. When something does (a
//!   record locked by another attempt, a kill, the commit gate closed by another, a
//!   read no longer valid) it undoes what it did: every record it locked gets back
//!   the version it had, as a rollback does, and its status word reads active again,
//!   the same word as before, and the attempt is no longer straight (so `commit` does
//!   not try the straight path again). The general commit then runs and meets what
//!   stopped it. Only the clock may have moved (an aborted general commit moves it
//!   too).
//! - Neither calls anything: a straight attempt counts no statistics, and its solo undo
//!   log, if any, opens on a buffer already allocated and closes within the
//!   capacity kept (a store that grows the log makes the attempt not straight). The
//!   blocks a straight attempt allocated for the program (`Core::allocations`, none a
//!   boxed `TVar` value) are forgotten at its end: they are the program's.
//! - `try_commit` also commits an attempt that is straight but for blocks it freed
//!   (`Mode::SoloBlocks`, `Mode::Blocks`), through one call: the blocks commit of
//!   `solo_blocks.rs`, which calls the freed blocks' release functions, or of
//!   `blocks.rs`, which retires them through the epochs.

use crate::attempt::abort::{Abort, AbortReason};
use crate::attempt::commit::{CommitPath, Obstacle};
use crate::attempt::descriptor::{Core, TxDescriptor, TxOptions};
use crate::attempt::mode::Mode;
use crate::global::orec::LockWord;
use crate::global::stm::StmInner;
use crate::global::sync::Ordering;
use crate::modes::read_only::READ_ONLY_ATTEMPTS;

impl TxDescriptor {
    /// Begins a transaction at `site` (priority 0, not irrevocable) if nothing but the
    /// straight case applies: the descriptor's last transaction committed without
    /// aborts on an engine without hooks or statistics (so it left nothing to give
    /// way to), and no serial attempt is in the way.
    /// Returns `false`, having changed nothing, otherwise: call
    /// [`TxDescriptor::begin`] then (the first transaction of a descriptor always
    /// does).
    ///
    /// ```
    /// use lutra_stm::{Config, Stm, TxDescriptor, TxOptions};
    /// let stm = Stm::new(Config::default().with_stats(false));
    /// let mut tx = TxDescriptor::new(&stm).unwrap();
    /// if !tx.try_begin(7) {
    ///     tx.begin(TxOptions::site(7));
    /// }
    /// assert!(tx.is_active());
    /// if !tx.try_commit() {
    ///     tx.commit().unwrap();
    /// }
    /// assert!(!tx.is_active());
    /// ```
    #[inline(always)]
    pub fn try_begin(&mut self, site: u32) -> bool {
        self.try_begin_hinted::<false>(site)
    }

    /// [`TxDescriptor::try_begin`] for a transaction with the read-only hint
    /// ([`TxOptions::read_only`]): what `begin` does with it, when the straight case
    /// applies — a solo attempt (which keeps no read set anyway), else a straight
    /// read-only attempt (`read_only.rs`).
    #[inline(always)]
    pub fn try_begin_read_only(&mut self, site: u32) -> bool {
        self.try_begin_hinted::<true>(site)
    }

    /// [`TxDescriptor::try_begin`], with the read-only hint if `READ_ONLY`: one
    /// function, monomorphised, so that the begin without the hint is as it was.
    #[inline(always)]
    fn try_begin_hinted<const READ_ONLY: bool>(&mut self, site: u32) -> bool {
        let (stm, core) = (&*self.stm, &mut self.core);
        if core.mode() != Mode::Settled {
            return false;
        }
        debug_assert!(
            stm.straight_ends
                && core.last_abort.is_none()
                && !core.escalation.is_irrevocable()
                && core.aborts_in_row == 0
        );
        if core.solo_allowed && stm.solo.try_enter(&stm.registry, core.slot) {
            if !core.solo_undo.is_allocated() {
                stm.solo.exit();
                return false;
            }
            core.start_solo_ready(stm);
            core.set_mode(Mode::SoloStraight);
            if READ_ONLY {
                // A solo attempt ends the read-only attempts (`read_only.rs`).
                core.read_only_left = 0;
            }
        } else if core.try_announce(stm) {
            if READ_ONLY {
                core.read_only_left = READ_ONLY_ATTEMPTS - 1;
                core.start_read_only(true);
            } else {
                core.set_mode(Mode::Straight);
            }
        } else {
            return false;
        }
        core.options = TxOptions {
            site,
            read_only: READ_ONLY,
            ..TxOptions::default()
        };
        core.age = core.rv;
        true
    }

    /// Commits the running attempt if it is straight and nothing stands in its way.
    /// A straight attempt with nothing to write back (it only read, or it ran solo)
    /// always commits here, inline: its reads were consistent at its snapshot, which
    /// is its serialization point. One that wrote commits here, through one call,
    /// unless a record it wrote is locked by another attempt, it was killed, an
    /// irrevocable attempt holds the commit gate, or its reads no longer hold. An attempt,
    /// solo or instrumented, that would be straight but for blocks it freed commits
    /// here too, through one call (`solo_blocks.rs`, `blocks.rs`).
    /// Returns `false`, having changed nothing the program can see, otherwise: call
    /// [`TxDescriptor::commit`] then, which meets the same obstacle and decides
    /// (waits, aborts).
    #[inline(always)]
    pub fn try_commit(&mut self) -> bool {
        self.try_commit_inline() || self.try_commit_after_inline()
    }

    /// The part of [`TxDescriptor::try_commit`] that calls, for a driver that
    /// called [`TxDescriptor::try_commit_inline`] first and met `false` (the C ABI's
    /// `stm_commit`): commits through one call as `try_commit` would, or returns
    /// `false`, having changed nothing the program can see.
    #[inline(always)]
    pub fn try_commit_after_inline(&mut self) -> bool {
        if self.core.mode().is_straight() {
            return self.core.try_commit_update(&self.stm);
        }
        match self.core.mode() {
            Mode::SoloBlocks => self.core.commit_solo_blocks(&self.stm),
            Mode::Blocks => self.core.commit_blocks(&self.stm),
            Mode::ReadOnlyStraight => {
                self.core.commit_read_only_straight(&self.stm);
                true
            }
            _ => false,
        }
    }

    /// The part of [`TxDescriptor::try_commit`] that needs no call: commits the
    /// running attempt if it is straight and has nothing to write back. Returns `false`,
    /// having done nothing, otherwise. For a driver whose straight case must not
    /// need a stack frame (the C ABI's `stm_commit`).
    #[inline(always)]
    pub fn try_commit_inline(&mut self) -> bool {
        let core = &mut self.core;
        if !core.mode().is_straight() || !core.writes.is_empty() {
            return false;
        }
        // A straight attempt is solo exactly when its read set is closed (see
        // `Core::finish_straight`): a test of memory, where a second test of the mode
        // would cost a register.
        let solo = !core.reads.is_open();
        core.finish_straight(&self.stm, solo);
        true
    }
}

impl Core {
    /// [`Core::announce`] unless a serial attempt stands in the way: then the
    /// announcement is withdrawn and `false` returned (the general path waits).
    #[inline(always)]
    fn try_announce(&mut self, stm: &StmInner) -> bool {
        self.publish_active(stm);
        if stm.serial.held_by_other(self.slot) {
            self.withdraw(stm);
            return false;
        }
        self.become_active(stm);
        true
    }

    /// Takes back what [`Core::publish_active`] made visible.
    #[inline(always)]
    fn withdraw(&mut self, stm: &StmInner) {
        let shared = self.shared(stm);
        stm.epochs.quiesce_in(&shared.epoch);
        self.status = self.status.idle();
        shared.status.store(self.status.encode(), Ordering::Release);
    }

    /// The end of a straight attempt that committed with nothing to write back: what
    /// [`Core::finish`] does for it, with no call (a straight attempt has no statistics
    /// to count, and its undo log is within the capacity kept). The blocks it
    /// allocated are the program's now: it forgets them. `solo` tells the attempt's
    /// mode (`SoloStraight`, else `Straight`); a straight attempt's read set is open
    /// exactly when it is instrumented (whatever closes an instrumented attempt's set
    /// — a doom, a lock, a growth — makes it not straight first), so either tells.
    #[inline(always)]
    pub(crate) fn finish_straight(&mut self, stm: &StmInner, solo: bool) {
        debug_assert!(self.writes.is_empty() && self.locks.is_empty());
        debug_assert!(self.mode().is_straight() || self.mode() == Mode::Blocks);
        debug_assert_eq!(solo, self.mode().is_solo());
        debug_assert_eq!(solo, !self.reads.is_open());
        debug_assert!(self.started_at.is_none());
        self.allocations.clear();
        if solo {
            // A straight solo attempt read through no set and announced no epoch: what
            // `go_idle` does beyond the status word is done already.
            debug_assert!(!self.reads.is_open() && self.reads.len() == 0);
            self.publish_idle(stm);
            self.end_solo_ready(stm);
        } else {
            self.go_idle(stm);
        }
        self.set_mode(Mode::Settled);
    }

    /// The commit of a straight attempt that wrote: `commit.rs`'s protocol through
    /// [`StraightCommit`], with no call but the read set's validation when another
    /// commit came since the snapshot. Returns `false` when something stands in the
    /// way, having undone what it did (see the module's invariants): the general
    /// commit (`commit.rs`) runs then.
    #[inline(never)]
    pub(crate) fn try_commit_update(&mut self, stm: &StmInner) -> bool {
        debug_assert!(self.mode() == Mode::Straight && self.doomed.is_none());
        debug_assert!(self.locks.is_empty() && self.frees.is_empty());
        debug_assert!(self.allocations.iter().all(|block| !block.tvar_value));
        if !stm.locks_at_commit() {
            return false;
        }
        self.commit_writes::<StraightCommit>(stm)
    }

    /// [`Core::try_commit_update`] met something in its way: its status word reads
    /// active again (if `committing`, it was set to committing), and every record it
    /// locked gets back the version it had. The attempt is no longer straight: the
    /// general commit takes over, and the straight one is not tried again for it.
    /// Returns `false`, for the caller.
    #[cold]
    #[inline(never)]
    fn give_up_commit(&mut self, stm: &StmInner, committing: bool) -> bool {
        self.mark_not_straight();
        if committing {
            // ORDERING: sequentially consistent as the compare-and-swap it undoes: a
            // gate's holder draining committers (`gate.rs`) sees the attempt active
            // again, and the general commit sets it committing again before it looks
            // at the gate.
            self.shared(stm)
                .status
                .store(self.status.encode(), Ordering::SeqCst);
        }
        self.release_unchanged(stm);
        false
    }
}

/// The straight commit's way through the protocol (`commit.rs`): it locks each
/// written record by one compare-and-swap, never waits, and gives up at the first
/// obstacle, undoing what it did ([`Core::give_up_commit`]).
pub(crate) struct StraightCommit;

impl CommitPath for StraightCommit {
    type Output = bool;
    const MAY_BE_IRREVOCABLE: bool = false;
    const STRAIGHT: bool = true;

    #[inline(always)]
    fn lock_writes(core: &mut Core, stm: &StmInner) -> Result<(), Abort> {
        // ORDERING: the release half of the first compare-and-swap publishes the age
        // and priority to whoever finds a record locked.
        core.publish_age_and_priority(stm);
        let mine = LockWord::locked(core.slot);
        for entry in core.writes.entries() {
            let orec = stm.orecs.index_of_record(entry.record);
            let record = stm.orecs.record(orec);
            let current = record.load(Ordering::Acquire);
            match LockWord::decode(current) {
                LockWord::Unlocked { version }
                    if record
                        .compare_exchange(current, mine, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok() =>
                {
                    core.locks.push(orec, version);
                }
                // A record guarding two written words, locked for the first.
                LockWord::Locked { owner } if owner == core.slot => {}
                _ => return Err(Abort::new(AbortReason::WriteConflict)),
            }
        }
        Ok(())
    }

    #[inline(always)]
    fn stopped(core: &mut Core, stm: &StmInner, obstacle: Obstacle) -> bool {
        core.give_up_commit(stm, obstacle.after_status_set())
    }

    #[inline(always)]
    fn committed(core: &mut Core, stm: &StmInner) -> bool {
        core.writes.clear();
        core.locks.clear();
        core.finish_straight(stm, false);
        true
    }
}
