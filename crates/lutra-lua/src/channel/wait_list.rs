//! Who waits on an event, and how to wake them: [`WaitList`] wakes everybody (a
//! process finished: all its joiners go on), [`WakeQueue`] wakes one at a time (a
//! message arrived: one receiver can take it).
//!
//! # Invariants
//! - Each holds at most one entry per waiter id; registering, unregistering and
//!   waking one cost O(1) (amortised), whatever the number of waiters. Ids are the
//!   runtime's own numbers, so the maps use a cheap hash (Fx), not SipHash.
//! - [`WakeQueue`]: an entry is `Waiting` (in `order`, its ticket current) or `Woken`
//!   (taken out of `order` by [`WakeQueue::wake_one`], counted in `woken`, until its
//!   waiter resolves it with [`WakeQueue::remove`] or registers again). `order` may
//!   also hold stale tickets (entries removed or re-registered since), skipped when
//!   met and dropped in a sweep once they outnumber the live ones.

use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;
use std::task::Waker;

/// Who waits: a process id (or a host thread's id) and how to wake it.
#[derive(Debug, Clone)]
pub(crate) struct Waiter {
    /// Process id; a later registration by the same id replaces the earlier one.
    pub(crate) id: u64,
    /// Wakes the waiter (a scheduler task, or a parked OS thread).
    pub(crate) waker: Waker,
}

/// Waiters of one event, keyed by id, all woken at once.
#[derive(Debug, Default)]
pub(crate) struct WaitList {
    waiters: HashMap<u64, Waker>,
}

impl WaitList {
    /// Registers `waiter`, replacing an earlier registration with the same id.
    pub(crate) fn register(&mut self, waiter: Waiter) {
        self.waiters.insert(waiter.id, waiter.waker);
    }

    /// Whether nobody waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.waiters.is_empty()
    }

    /// Wakes every waiter and forgets them (each re-checks its condition when it runs).
    pub(crate) fn wake_all(&mut self) {
        for (_, waker) in self.waiters.drain() {
            waker.wake();
        }
    }
}

/// One registration in a [`WakeQueue`].
#[derive(Debug)]
enum Entry {
    /// In the queue under `ticket`, not woken yet.
    Waiting { ticket: u64, waker: Waker },
    /// Woken, and not yet back to say whether it took what it was woken for.
    Woken,
}

/// Waiters of one event in FIFO order, woken one at a time; the owner keeps count of
/// the woken ones ([`WakeQueue::woken`]) to know when another must be woken.
#[derive(Debug, Default)]
pub(crate) struct WakeQueue {
    entries: HashMap<u64, Entry>,
    /// `(id, ticket)` of the waiting entries, oldest first, plus stale tickets.
    order: VecDeque<(u64, u64)>,
    next_ticket: u64,
    /// Entries in the `Woken` state.
    woken: usize,
}

impl WakeQueue {
    /// Registers `waiter`: a waiting one keeps its place (its waker is replaced), a
    /// woken or new one goes to the back (a woken one is no longer counted woken).
    pub(crate) fn register(&mut self, waiter: Waiter) {
        let fresh_ticket = self.next_ticket;
        match self.entries.get_mut(&waiter.id) {
            Some(Entry::Waiting { waker, .. }) => {
                *waker = waiter.waker;
                return;
            }
            Some(entry @ Entry::Woken) => {
                self.woken -= 1;
                *entry = Entry::Waiting {
                    ticket: fresh_ticket,
                    waker: waiter.waker,
                };
            }
            None => {
                self.entries.insert(
                    waiter.id,
                    Entry::Waiting {
                        ticket: fresh_ticket,
                        waker: waiter.waker,
                    },
                );
            }
        }
        self.next_ticket += 1;
        self.order.push_back((waiter.id, fresh_ticket));
        self.sweep();
    }

    /// Removes the entry of `id`, if any; returns whether it had been woken (then
    /// [`WakeQueue::woken`] counts one fewer).
    pub(crate) fn remove(&mut self, id: u64) -> bool {
        match self.entries.remove(&id) {
            None => false,
            Some(Entry::Waiting { .. }) => {
                self.sweep();
                false
            }
            Some(Entry::Woken) => {
                self.woken -= 1;
                true
            }
        }
    }

    /// Entries woken and not yet resolved.
    pub(crate) fn woken(&self) -> usize {
        self.woken
    }

    /// Wakes the oldest waiting entry (it becomes `Woken`); `false` if none waits.
    pub(crate) fn wake_one(&mut self) -> bool {
        while let Some((id, ticket)) = self.order.pop_front() {
            let Some(entry) = self.entries.get_mut(&id) else {
                continue;
            };
            if !matches!(entry, Entry::Waiting { ticket: t, .. } if *t == ticket) {
                continue;
            }
            let Entry::Waiting { waker, .. } = std::mem::replace(entry, Entry::Woken) else {
                unreachable!("matched as waiting just above")
            };
            self.woken += 1;
            waker.wake();
            return true;
        }
        false
    }

    /// Wakes every waiting entry and forgets every entry (the event ended for all).
    pub(crate) fn wake_all(&mut self) {
        self.order.clear();
        self.woken = 0;
        for (_, entry) in self.entries.drain() {
            if let Entry::Waiting { waker, .. } = entry {
                waker.wake();
            }
        }
    }

    /// Drops the stale tickets of `order` once they outnumber the live ones (each
    /// sweep is paid for by as many stale tickets as it keeps live ones).
    fn sweep(&mut self) {
        let live = self.entries.len() - self.woken;
        if self.order.len() <= 2 * live + 16 {
            return;
        }
        let entries = &self.entries;
        self.order.retain(|(id, ticket)| {
            matches!(entries.get(id), Some(Entry::Waiting { ticket: t, .. }) if t == ticket)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiter(id: u64) -> Waiter {
        Waiter {
            id,
            waker: Waker::noop().clone(),
        }
    }

    /// Registrations that come and go (a select that leaves again and again) leave
    /// no trail: stale tickets are swept, and the one who still waits is woken.
    #[test]
    fn stale_tickets_stay_bounded() {
        let mut queue = WakeQueue::default();
        queue.register(waiter(1));
        for _ in 0..10_000 {
            queue.register(waiter(2));
            assert!(!queue.remove(2));
        }
        assert!(
            queue.order.len() <= 2 + 16 + 1,
            "{} tickets",
            queue.order.len()
        );
        assert!(queue.wake_one());
        assert_eq!(queue.woken(), 1);
        assert!(!queue.wake_one(), "only 1 waited");
        assert!(queue.remove(1));
        assert_eq!(queue.woken(), 0);
    }

    /// A woken entry that registers again is waiting again, at the back.
    #[test]
    fn a_woken_entry_registering_goes_to_the_back() {
        let mut queue = WakeQueue::default();
        queue.register(waiter(1));
        queue.register(waiter(2));
        assert!(queue.wake_one());
        queue.register(waiter(1));
        assert_eq!(queue.woken(), 0);
        assert!(queue.wake_one());
        assert!(queue.remove(2), "2 was next");
        assert!(queue.wake_one());
        assert!(queue.remove(1));
    }
}
