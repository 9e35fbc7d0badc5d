//! The registry of transaction descriptors: what other transactions may know of one.
//!
//! Each descriptor owns one slot for its lifetime; slots are reused after the
//! descriptor is dropped. The owner slot is what a locked ownership record names, so a
//! conflicting transaction can find its enemy's status, priority, size and age.
//!
//! # Status word
//!
//! | bits 0..2 | state | meaning | who moves it out |
//! |-----------|-------|---------|------------------|
//! | 0 | `Idle` | no attempt running | the owner, to `Active` (with serial + 1) |
//! | 1 | `Active` | an attempt runs and may still abort | the owner (to `Committing` by CAS, or `Idle`); a contention manager (to `Killed` by CAS) |
//! | 2 | `Killed` | doomed by another transaction; may still hold locks until the owner notices | the owner, to `Idle` after releasing everything |
//! | 3 | `Committing` | past the point of no return; cannot be killed | the owner, to `Idle` |
//!
//! Bit 2 is set while the attempt is irrevocable: such an attempt is never killed (the
//! kill CAS expects the bit clear). Bits 3..64 hold the attempt serial, so a kill aimed
//! at one attempt can never hit the next one (the CAS expects the serial it read).
//!
//! # Invariants
//! - Only the owner changes the word, except the `Active → Killed` CAS.
//! - `Active → Committing` and `Active → Killed` race on one CAS: exactly one wins.
//! - `epoch` is 0 (quiescent) whenever no attempt runs; otherwise it is the global
//!   epoch the attempt announced when it began (see `epoch.rs`).

use crate::global::stats::SlotStats;
use crate::global::sync::{AtomicU64, AtomicUsize, Mutex, Ordering, lock};
use crossbeam_utils::CachePadded;

/// The state part of a status word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TxState {
    Idle = 0,
    Active = 1,
    Killed = 2,
    Committing = 3,
}

/// A status word: the attempt's serial in bits 3 and up, the irrevocable flag in bit
/// 2, the [`TxState`] in bits 0–1. Kept encoded, so that storing it or comparing
/// it with the shared word costs nothing more.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Status(u64);

impl Status {
    /// The word of an attempt with this `state`, flag and `serial`.
    #[inline(always)]
    pub(crate) fn new(state: TxState, irrevocable: bool, serial: u64) -> Self {
        Self((serial << 3) | (u64::from(irrevocable) << 2) | state as u64)
    }

    /// The status a shared word holds.
    #[inline(always)]
    pub(crate) fn decode(word: u64) -> Self {
        Self(word)
    }

    /// The word to store in the shared status.
    #[inline(always)]
    pub(crate) fn encode(self) -> u64 {
        self.0
    }

    #[inline(always)]
    pub(crate) fn state(self) -> TxState {
        match self.0 & 3 {
            0 => TxState::Idle,
            1 => TxState::Active,
            2 => TxState::Killed,
            _ => TxState::Committing,
        }
    }

    #[inline(always)]
    pub(crate) fn irrevocable(self) -> bool {
        self.0 & 4 != 0
    }

    #[inline(always)]
    pub(crate) fn serial(self) -> u64 {
        self.0 >> 3
    }

    /// The same attempt in `state`.
    #[inline(always)]
    pub(crate) fn with_state(self, state: TxState) -> Self {
        Self((self.0 & !3) | state as u64)
    }

    /// The next attempt's word: serial one higher, `Active`, not irrevocable.
    #[inline(always)]
    pub(crate) fn next_active(self) -> Self {
        Self::new(TxState::Active, false, self.serial() + 1)
    }

    /// The same attempt ended: `Idle`, not irrevocable.
    #[inline(always)]
    pub(crate) fn idle(self) -> Self {
        Self(self.0 & !7)
    }
}

impl std::fmt::Debug for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Status")
            .field("state", &self.state())
            .field("irrevocable", &self.irrevocable())
            .field("serial", &self.serial())
            .finish()
    }
}

/// What other transactions can see of one descriptor.
pub(crate) struct SharedDescriptor {
    pub(crate) status: AtomicU64,
    /// Contention priority, fixed for the whole transaction (all its attempts).
    pub(crate) priority: AtomicU64,
    /// Clock value when the transaction's first attempt began: smaller is older.
    pub(crate) age: AtomicU64,
    /// Read set plus write set entries, published from time to time.
    pub(crate) size: AtomicUsize,
    /// The slot and attempt serial of the transaction that last killed this one.
    pub(crate) killer_slot: AtomicUsize,
    pub(crate) killer_serial: AtomicU64,
    /// The serial of the last attempt killed, stored (release) by the winning killer
    /// after `killer_slot` and `killer_serial`: a victim reads those once this names
    /// its own attempt.
    pub(crate) killed_serial: AtomicU64,
    /// Announced reclamation epoch, 0 when quiescent.
    pub(crate) epoch: AtomicU64,
    pub(crate) stats: SlotStats,
}

impl SharedDescriptor {
    fn new() -> Self {
        Self {
            status: AtomicU64::new(0),
            priority: AtomicU64::new(0),
            age: AtomicU64::new(0),
            size: AtomicUsize::new(0),
            killer_slot: AtomicUsize::new(0),
            killer_serial: AtomicU64::new(0),
            killed_serial: AtomicU64::new(u64::MAX),
            epoch: AtomicU64::new(0),
            stats: SlotStats::default(),
        }
    }

    pub(crate) fn status(&self) -> Status {
        Status::decode(self.status.load(Ordering::SeqCst))
    }

    /// Dooms the attempt `expected` if it is still active, naming `killer` (slot and
    /// attempt serial) as the one its restart must wait for. Returns whether this call
    /// (or an earlier kill of the same attempt) doomed it.
    pub(crate) fn kill(&self, expected: Status, killer: (usize, u64)) -> bool {
        debug_assert!(expected.state() == TxState::Active && !expected.irrevocable());
        let killed = expected.with_state(TxState::Killed);
        match self.status.compare_exchange(
            expected.encode(),
            killed.encode(),
            Ordering::SeqCst,
            Ordering::SeqCst,
        ) {
            Ok(_) => {
                // Only the winner names itself: a killer whose CAS failed must not
                // overwrite the identity the victim will wait for.
                self.killer_slot.store(killer.0, Ordering::Relaxed);
                self.killer_serial.store(killer.1, Ordering::Relaxed);
                // ORDERING: pairs with the acquire load in `killer_of`.
                self.killed_serial
                    .store(expected.serial(), Ordering::Release);
                true
            }
            Err(now) => now == killed.encode(),
        }
    }

    /// The slot and attempt serial of the transaction that killed this descriptor's
    /// attempt `serial`, waiting (briefly: the killer writes them right after its
    /// winning CAS) until it has named itself.
    pub(crate) fn killer_of(
        &self,
        stm: &crate::global::stm::StmInner,
        serial: u64,
    ) -> (usize, u64) {
        stm.wait_until(|| self.killed_serial.load(Ordering::Acquire) == serial);
        (
            self.killer_slot.load(Ordering::Relaxed),
            self.killer_serial.load(Ordering::Relaxed),
        )
    }
}

/// The slots of one engine instance.
pub(crate) struct Registry {
    slots: Box<[CachePadded<SharedDescriptor>]>,
    free: Mutex<Vec<usize>>,
    /// One past the highest slot ever handed out: scans stop here.
    high_water: AtomicUsize,
    /// Slots in use (descriptors alive): see `solo.rs`.
    live: AtomicUsize,
}

impl Registry {
    pub(crate) fn new(capacity: usize) -> Self {
        let slots = (0..capacity)
            .map(|_| CachePadded::new(SharedDescriptor::new()))
            .collect();
        Self {
            slots,
            free: Mutex::new(Vec::new()),
            high_water: AtomicUsize::new(0),
            live: AtomicUsize::new(0),
        }
    }

    /// Takes a free slot, or `None` when all `capacity` slots are in use.
    pub(crate) fn acquire(&self) -> Option<usize> {
        let mut free = lock(&self.free);
        let slot = match free.pop() {
            Some(slot) => slot,
            None => {
                let next = self.high_water.load(Ordering::Relaxed);
                if next == self.slots.len() {
                    return None;
                }
                self.high_water.store(next + 1, Ordering::SeqCst);
                next
            }
        };
        // ORDERING: step 2 of the solo protocol (`solo.rs`), paired with the
        // soloist's read of `live` after its CAS.
        self.live.fetch_add(1, Ordering::SeqCst);
        Some(slot)
    }

    /// Gives `slot` back; its owner must be idle and quiescent.
    pub(crate) fn release(&self, slot: usize) {
        self.live.fetch_sub(1, Ordering::SeqCst);
        lock(&self.free).push(slot);
    }

    /// How many slots are in use.
    #[inline]
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    #[inline]
    pub(crate) fn get(&self, slot: usize) -> &SharedDescriptor {
        &self.slots[slot]
    }

    /// Every slot handed out so far (some may be free again, hence idle).
    pub(crate) fn in_use(&self) -> impl Iterator<Item = (usize, &SharedDescriptor)> {
        let end = self.high_water.load(Ordering::SeqCst);
        self.slots[..end]
            .iter()
            .enumerate()
            .map(|(index, slot)| (index, &**slot))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_words_round_trip() {
        let status = Status::new(TxState::Committing, true, 99);
        assert_eq!(Status::decode(status.encode()), status);
    }

    #[test]
    fn kill_hits_only_the_attempt_it_aims_at() {
        let shared = SharedDescriptor::new();
        let first = Status::new(TxState::Active, false, 1);
        shared.status.store(first.encode(), Ordering::SeqCst);
        let second = Status::new(TxState::Active, false, 2);
        shared.status.store(second.encode(), Ordering::SeqCst);
        assert!(!shared.kill(first, (5, 1)));
        assert!(shared.kill(second, (5, 1)));
        assert!(
            shared.kill(second, (5, 1)),
            "killing twice reports the kill"
        );
        assert_eq!(shared.killer_slot.load(Ordering::Relaxed), 5);
        assert_eq!(shared.status().state(), TxState::Killed);
    }

    #[test]
    fn a_losing_killer_does_not_rename_the_killer() {
        let shared = SharedDescriptor::new();
        let victim = Status::new(TxState::Active, false, 7);
        shared.status.store(victim.encode(), Ordering::SeqCst);
        assert!(shared.kill(victim, (1, 10)), "the first killer wins");
        // A second killer saw the same attempt active and tries too: its CAS fails.
        assert!(shared.kill(victim, (2, 20)));
        let stm = crate::Stm::default();
        assert_eq!(
            shared.killer_of(&stm.inner, 7),
            (1, 10),
            "the victim would wait for the attempt that lost the race"
        );
    }

    #[test]
    fn slots_are_reused_and_bounded() {
        let registry = Registry::new(2);
        let a = registry.acquire().unwrap();
        let b = registry.acquire().unwrap();
        assert_ne!(a, b);
        assert_eq!(registry.acquire(), None);
        registry.release(a);
        assert_eq!(registry.acquire(), Some(a));
    }
}

/// Weak-memory check of the kill handshake on loom (see `src/sync.rs`; run with `cargo
/// test --release -p lutra-stm --features loom --lib registry::loom_model`).
#[cfg(all(test, feature = "loom"))]
mod loom_model {
    use super::*;
    use crate::{Config, Stm};
    use loom::thread;
    use std::sync::Arc;

    /// Two killers race to doom one attempt; the victim sees itself killed and asks
    /// `killer_of` whom to wait for: it must get the whole identity of the killer
    /// whose CAS won, never the other's or a mix of the two.
    #[test]
    fn a_victim_learns_the_killer_that_won() {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound.get_or_insert(3);
        builder.check(|| {
            let stm = Stm::new(
                Config::default()
                    .with_orec_bits(2)
                    .with_max_descriptors(2)
                    .with_stats(false),
            );
            let victim = Arc::new(SharedDescriptor::new());
            let attempt = Status::new(TxState::Active, false, 1);
            victim.status.store(attempt.encode(), Ordering::Release);
            let killers: Vec<_> = [(5, 9), (6, 7)]
                .into_iter()
                .map(|killer| {
                    let victim = victim.clone();
                    thread::spawn(move || assert!(victim.kill(attempt, killer)))
                })
                .collect();
            stm.inner
                .wait_until(|| victim.status().state() == TxState::Killed);
            let named = victim.killer_of(&stm.inner, attempt.serial());
            assert!(
                named == (5, 9) || named == (6, 7),
                "the victim would wait for {named:?}"
            );
            killers
                .into_iter()
                .for_each(|killer| killer.join().unwrap());
            assert_eq!(victim.killer_of(&stm.inner, attempt.serial()), named);
        });
    }
}
