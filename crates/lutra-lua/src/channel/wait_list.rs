//! Who waits on an event, and how to wake them: [`WaitList`] wakes everybody (a
//! process finished: all its joiners go on), [`WakeQueue`] wakes one at a time (a
//! message arrived: one receiver can take it).
//!
//! # Invariants
//! - Each holds at most one entry per waiter id; registering, unregistering and
//!   waking one cost O(1) (amortised), whatever the number of waiters. Ids are the
//!   runtime's own numbers, so the maps use a cheap hash (Fx), not SipHash.
//! - [`WakeQueue`]: an entry is `Waiting` (in `order`, its ticket current), `Woken`
//!   (taken out of `order` by [`WakeQueue::wake_one`], counted in `woken`, until its
//!   waiter resolves it with [`WakeQueue::remove`] or registers again) or `Delivered`
//!   (a waiting entry registered *direct* was handed a message by
//!   [`WakeQueue::deliver`]: out of `order`, counted in `delivered`, until its waiter
//!   takes the message, [`WakeQueue::take_delivered`], or leaves,
//!   [`WakeQueue::remove`], which hands the message back). `order` may also hold
//!   stale tickets (entries removed, re-registered or resolved since), skipped when
//!   met and dropped in a sweep once they outnumber the live ones.
//! - A `Delivered` entry is never dropped with its message: registering again keeps
//!   it, and [`WakeQueue::wake_all`] keeps it.
//! - [`WakeQueue::deliver`], [`WakeQueue::wake_one`] and [`WakeQueue::wake_all`]
//!   change the entries they wake at once, and leave their wakers in a [`Wakes`],
//!   which wakes them once the lock that guards the queue is released: the wake-up
//!   (a task pushed or handed to a worker) costs the lock's holders nothing.

use crate::transfer::Message;
use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;
use std::collections::hash_map::Entry as Slot;
use std::mem::ManuallyDrop;
use std::task::Waker;

/// Who waits: a process id (or a host thread's id) and how to wake it.
#[derive(Debug, Clone)]
pub(crate) struct Waiter {
    /// Process id; a later registration by the same id replaces the earlier one.
    pub(crate) id: u64,
    /// Wakes the waiter (a scheduler task, or a parked OS thread).
    pub(crate) waker: Waker,
}

/// Wakers chosen under a lock, woken when this is dropped: declared before the lock's
/// guard, it is dropped after it, so they are woken once the lock is released. A
/// message mostly chooses one: it is kept apart from the (rare) others.
///
/// # Invariants
/// `others` has room allocated only once `first` was set (`add` fills `first` first):
/// an empty `Wakes`, the common case of a poll, is dropped with one test, and the
/// list is dropped by hand only when it was used.
#[derive(Default)]
pub(crate) struct Wakes {
    first: Option<Waker>,
    others: ManuallyDrop<Vec<Waker>>,
}

impl Wakes {
    /// Adds `waker` to those to wake.
    #[inline]
    pub(crate) fn add(&mut self, waker: Waker) {
        if self.first.is_none() {
            self.first = Some(waker);
        } else {
            self.others.push(waker);
        }
    }

    /// Wakes the others and frees their list.
    #[cold]
    fn wake_others(&mut self) {
        self.others.drain(..).for_each(Waker::wake);
        // SAFETY: dropped once, here, from `drop` (the list is not used after it).
        unsafe { ManuallyDrop::drop(&mut self.others) }
    }
}

impl Drop for Wakes {
    /// Wakes them, in the order they were chosen.
    #[inline]
    fn drop(&mut self) {
        if let Some(first) = self.first.take() {
            first.wake();
            if self.others.capacity() != 0 {
                self.wake_others();
            }
        }
    }
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
    /// In the queue under `ticket`, not woken yet; `direct`: it takes a message
    /// handed to it ([`WakeQueue::deliver`]).
    Waiting {
        ticket: u64,
        waker: Waker,
        direct: bool,
    },
    /// Woken, and not yet back to say whether it took what it was woken for.
    Woken,
    /// Handed message `.0` of sequence `.1`, and woken; not yet back to take it.
    Delivered(Message, u64),
}

/// A waker given to register: owned, or borrowed (cloned only if kept).
pub(crate) enum WakerArg<'a> {
    /// Kept as it is.
    Owned(Waker),
    /// Cloned if kept.
    Borrowed(&'a Waker),
}

impl WakerArg<'_> {
    /// The waker, owned.
    pub(crate) fn into_owned(self) -> Waker {
        match self {
            Self::Owned(waker) => waker,
            Self::Borrowed(waker) => waker.clone(),
        }
    }

    /// Puts this waker in `old`'s place, unless `old` wakes the same task already.
    fn replace(self, old: &mut Waker) {
        match self {
            Self::Owned(waker) => *old = waker,
            Self::Borrowed(waker) => {
                if !old.will_wake(waker) {
                    *old = waker.clone();
                }
            }
        }
    }

    /// A waiting entry with this waker.
    fn waiting(self, ticket: u64, direct: bool) -> Entry {
        Entry::Waiting {
            ticket,
            waker: self.into_owned(),
            direct,
        }
    }
}

/// What [`WakeQueue::remove`] found.
#[derive(Debug)]
pub(crate) enum Removed {
    /// No entry, or a waiting one.
    Quiet,
    /// A woken entry ([`WakeQueue::woken`] counts one fewer).
    Woken,
    /// An entry handed this message (of this sequence), which it did not take.
    Delivered(Message, u64),
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
    /// Entries in the `Delivered` state.
    delivered: usize,
}

impl WakeQueue {
    /// Registers `waiter`: a waiting one keeps its place (its waker is replaced), a
    /// woken or new one goes to the back (a woken one is no longer counted woken); a
    /// delivered one stays as it is (its message waits for it).
    pub(crate) fn register(&mut self, waiter: Waiter) {
        self.enter(waiter.id, WakerArg::Owned(waiter.waker), false);
    }

    /// Registers waiter `id` as [`WakeQueue::register`] does, as one that takes a
    /// message handed to it while it waits ([`WakeQueue::deliver`]): its waiter
    /// takes it with [`WakeQueue::take_delivered`] before anything else. `waker` is
    /// cloned only if the entry does not hold one that wakes the same task.
    #[inline]
    pub(crate) fn register_direct(&mut self, id: u64, waker: &Waker) {
        self.enter(id, WakerArg::Borrowed(waker), true);
    }

    #[inline]
    fn enter(&mut self, id: u64, waker: WakerArg<'_>, direct: bool) {
        let ticket = self.next_ticket;
        match self.entries.entry(id) {
            Slot::Occupied(slot) => match slot.into_mut() {
                Entry::Waiting {
                    waker: old,
                    direct: was_direct,
                    ..
                } => {
                    waker.replace(old);
                    *was_direct = direct;
                    return;
                }
                Entry::Delivered(..) => return,
                entry @ Entry::Woken => {
                    self.woken -= 1;
                    *entry = waker.waiting(ticket, direct);
                }
            },
            Slot::Vacant(slot) => {
                slot.insert(waker.waiting(ticket, direct));
            }
        }
        self.next_ticket += 1;
        self.order.push_back((id, ticket));
        self.sweep();
    }

    /// Removes the entry of `id`, if any; returns whether it had been woken (then
    /// [`WakeQueue::woken`] counts one fewer). The entry is not a delivered one (its
    /// waiter took that message first, [`WakeQueue::take_delivered`]).
    #[inline]
    pub(crate) fn remove(&mut self, id: u64) -> bool {
        match self.withdraw(id) {
            Removed::Quiet => false,
            Removed::Woken => true,
            Removed::Delivered(..) => {
                unreachable!("a delivered entry is taken before it is removed")
            }
        }
    }

    /// Removes the entry of `id`, if any, and says what it was (a delivered entry
    /// hands its message back).
    #[inline]
    pub(crate) fn withdraw(&mut self, id: u64) -> Removed {
        match self.entries.remove(&id) {
            None => Removed::Quiet,
            Some(Entry::Waiting { .. }) => {
                self.sweep();
                Removed::Quiet
            }
            Some(Entry::Woken) => {
                self.woken -= 1;
                Removed::Woken
            }
            Some(Entry::Delivered(message, sequence)) => {
                self.delivered -= 1;
                Removed::Delivered(message, sequence)
            }
        }
    }

    /// The message handed to `id`, if any (its entry goes).
    #[inline]
    pub(crate) fn take_delivered(&mut self, id: u64) -> Option<Message> {
        let Slot::Occupied(slot) = self.entries.entry(id) else {
            return None;
        };
        if !matches!(slot.get(), Entry::Delivered(..)) {
            return None;
        }
        let Entry::Delivered(message, _) = slot.remove() else {
            unreachable!("matched as delivered just above")
        };
        self.delivered -= 1;
        Some(message)
    }

    /// Hands `message` (of `sequence`) to the oldest waiting entry, and adds its waker
    /// to `wakes`, if that entry is direct; otherwise gives the message back (the
    /// oldest waiting one goes first, so a message never overtakes it).
    #[inline]
    pub(crate) fn deliver(
        &mut self,
        message: Message,
        sequence: u64,
        wakes: &mut Wakes,
    ) -> Result<(), Message> {
        while let Some(&(id, ticket)) = self.order.front() {
            let entry = self.entries.get_mut(&id);
            match entry {
                Some(Entry::Waiting {
                    ticket: t,
                    direct: true,
                    ..
                }) if *t == ticket => {
                    self.order.pop_front();
                    let entry = entry.expect("matched just above");
                    let Entry::Waiting { waker, .. } =
                        std::mem::replace(entry, Entry::Delivered(message, sequence))
                    else {
                        unreachable!("matched as waiting just above")
                    };
                    self.delivered += 1;
                    wakes.add(waker);
                    return Ok(());
                }
                Some(Entry::Waiting { ticket: t, .. }) if *t == ticket => return Err(message),
                _ => {
                    self.order.pop_front();
                }
            }
        }
        Err(message)
    }

    /// Entries woken and not yet resolved.
    #[inline]
    pub(crate) fn woken(&self) -> usize {
        self.woken
    }

    /// Wakes the oldest waiting entry (it becomes `Woken`, its waker goes to
    /// `wakes`); `false` if none waits.
    #[inline]
    pub(crate) fn wake_one(&mut self, wakes: &mut Wakes) -> bool {
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
            wakes.add(waker);
            return true;
        }
        false
    }

    /// Wakes every waiting entry (their wakers go to `wakes`) and forgets every entry
    /// (the event ended for all). A delivered entry stays (its message is its
    /// waiter's).
    pub(crate) fn wake_all(&mut self, wakes: &mut Wakes) {
        self.order.clear();
        self.woken = 0;
        let ended = self
            .entries
            .extract_if(|_, entry| !matches!(entry, Entry::Delivered(..)));
        for (_, entry) in ended {
            if let Entry::Waiting { waker, .. } = entry {
                wakes.add(waker);
            }
        }
    }

    /// Drops the stale tickets of `order` once they outnumber the live ones (each
    /// sweep is paid for by as many stale tickets as it keeps live ones).
    #[inline]
    fn sweep(&mut self) {
        let live = self.entries.len() - self.woken - self.delivered;
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
    use std::sync::Arc;

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
        assert!(queue.wake_one(&mut Wakes::default()));
        assert_eq!(queue.woken(), 1);
        assert!(!queue.wake_one(&mut Wakes::default()), "only 1 waited");
        assert!(queue.remove(1));
        assert_eq!(queue.woken(), 0);
    }

    /// A waker that notes its number when woken.
    struct Noted(usize, std::sync::Arc<std::sync::Mutex<Vec<usize>>>);

    impl std::task::Wake for Noted {
        fn wake(self: std::sync::Arc<Self>) {
            self.1.lock().unwrap().push(self.0);
        }
    }

    /// Every waker added is woken once, in the order added, when the `Wakes` is
    /// dropped: none, one, or several (the first kept apart, the others listed).
    #[test]
    fn wakes_wake_each_once_in_order() {
        for count in [0, 1, 2, 5] {
            let woken = std::sync::Arc::default();
            {
                let mut wakes = Wakes::default();
                for number in 0..count {
                    wakes.add(Waker::from(std::sync::Arc::new(Noted(
                        number,
                        Arc::clone(&woken),
                    ))));
                }
                assert!(woken.lock().unwrap().is_empty(), "woken before the drop");
            }
            assert_eq!(*woken.lock().unwrap(), (0..count).collect::<Vec<_>>());
        }
    }

    /// A woken entry that registers again is waiting again, at the back.
    #[test]
    fn a_woken_entry_registering_goes_to_the_back() {
        let mut queue = WakeQueue::default();
        queue.register(waiter(1));
        queue.register(waiter(2));
        assert!(queue.wake_one(&mut Wakes::default()));
        queue.register(waiter(1));
        assert_eq!(queue.woken(), 0);
        assert!(queue.wake_one(&mut Wakes::default()));
        assert!(queue.remove(2), "2 was next");
        assert!(queue.wake_one(&mut Wakes::default()));
        assert!(queue.remove(1));
    }
}
