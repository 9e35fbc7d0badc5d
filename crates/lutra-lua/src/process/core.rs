//! What every process shares about another: its id, its outcome, who waits to join
//! it, its mailbox, and what it waits on (for the deadlock report).
//!
//! # Invariants
//! - The outcome moves once, from `Running` to `Finished` or `Failed`; joiners are
//!   woken then, and the mailbox is closed (sending to a finished process fails).
//! - `receiving` names every channel on which the process may hold a receiver's
//!   registration (a superset: a registration may have gone since, taken or closed).
//!   It is emptied, each channel left, when a blocking receive or select ends and when
//!   the process finishes, so a wake-up the process was handed and did not use passes
//!   on at once (the channel's "one wake per message", `channel/core.rs`). The channel
//!   a receive took its message from needs no leave (taking gave up the registration
//!   there): its entry may stay, so that a process receiving on one channel in a loop
//!   notes it once. Only the process itself touches it; its lock is never held while
//!   a channel's is taken.
//! - `receiving_only` sums `receiving` up, stored under its lock at every change: the
//!   id of the one channel it names, `RECEIVING_NONE` when it names none,
//!   `RECEIVING_MANY` when it names more (channel ids start at 1 and never reach
//!   `u64::MAX`). A receive that takes from the one channel it waits on, and a wait
//!   on a channel already noted, read it alone, without the lock.
//! - Cancellation, monitors and links (`cancel.rs`, `watch.rs`) live in `State` too:
//!   a request moves `cancel` from `None` to `Requested` once, the process's first
//!   raise of it to `Delivered`; `cancel_requested` mirrors "not `None`" for the
//!   per-slice check (Release on the store, under the lock). `finish` takes the
//!   monitors and links under the lock and acts on them after releasing it (no two
//!   processes' locks are ever held at once).
//! - What the process waits on is the label in its state while `waiting` is set: a
//!   wait sets the label (unless it is the same as the last one) and then the flag; a
//!   process that stops waiting clears the flag alone, without taking the lock. Only
//!   the process itself stores its labels (its own calls, one at a time), and
//!   `label_at` is the address of the one stored: a wait on that same label stores
//!   nothing.

use crate::channel::{Channel, WaitList, Waiter};
use crate::process::cancel::Cancel;
use crate::transfer::Message;
use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::Waker;

/// Process records alive in this OS process (see [`ProcessCore::records_alive`]).
static RECORDS_ALIVE: AtomicUsize = AtomicUsize::new(0);

/// `receiving_only` when `receiving` names no channel (module invariants).
const RECEIVING_NONE: u64 = 0;
/// `receiving_only` when `receiving` names more than one channel.
const RECEIVING_MANY: u64 = u64::MAX;

/// How a process ended, if it has.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Still running (or blocked).
    Running,
    /// Returned these values.
    Finished(Message),
    /// Raised an error: message and traceback.
    Failed(String),
}

/// The shared record of one process.
#[derive(Debug)]
pub struct ProcessCore {
    id: u64,
    origin: String,
    mailbox: Arc<Channel>,
    state: Mutex<State>,
    /// Channels the process may wait on as a receiver, by id (module invariants).
    receiving: Mutex<HashMap<u64, Weak<Channel>>>,
    /// What `receiving` names, in a word (module invariants).
    receiving_only: AtomicU64,
    /// Whether the process waits on what `State::waiting_on` says (module
    /// invariants): cleared without the lock when it stops waiting.
    waiting: AtomicBool,
    /// The address of the label in `State::waiting_on` (0: none): a wait on the same
    /// label takes no lock (the label, held there, keeps its address).
    label_at: AtomicUsize,
    /// Whether `State::cancel` is not `None` (module invariants): read once per slice.
    pub(super) cancel_requested: AtomicBool,
    /// Whether `State::cancel` is `Delivered`: the preemption hook interrupts running
    /// code with the cancellation only before that (`cancel.rs`, step 4).
    pub(super) cancel_delivered: AtomicBool,
}

#[derive(Debug)]
pub(super) struct State {
    pub(super) outcome: Outcome,
    /// Where the process stands with cancellation (`cancel.rs`).
    pub(super) cancel: Cancel,
    /// It ended cancelled (its outcome is `Failed` with the cancellation's message).
    pub(super) cancelled: bool,
    /// Slices started after the cancellation was requested (`cancel.rs`).
    pub(super) cancelled_slices: u32,
    /// The process's task waker, from its first slice to its end: a cancellation
    /// wakes it wherever it waits.
    pub(super) waker: Option<Waker>,
    /// Processes told when this one ends (`lutra.monitor`), one entry per call.
    pub(super) monitors: Vec<Weak<ProcessCore>>,
    /// Processes linked with this one (`lutra.spawn_link`), by id.
    pub(super) links: HashMap<u64, Weak<ProcessCore>>,
    /// A join or a monitor has attended to its end (a failure then does not fail the
    /// exit status).
    pub(super) joined: bool,
    joiners: WaitList,
    /// What the process waits on, or waited on last (see `waiting`).
    waiting_on: Option<Arc<str>>,
    /// It failed while nobody waited to join it: its error is reported at once.
    failed_unattended: bool,
    /// Its error has been reported (on standard error).
    reported: bool,
}

impl ProcessCore {
    /// A running process; `origin` says where it was spawned, `mailbox_capacity` how many
    /// messages its mailbox buffers before senders wait.
    pub fn new(id: u64, origin: String, mailbox_capacity: usize) -> Self {
        Self {
            id,
            origin,
            mailbox: Arc::new(Channel::new(mailbox_capacity)),
            state: Mutex::new(State {
                outcome: Outcome::Running,
                cancel: Cancel::None,
                cancelled: false,
                cancelled_slices: 0,
                waker: None,
                monitors: Vec::new(),
                links: HashMap::default(),
                joined: false,
                joiners: WaitList::default(),
                waiting_on: None,
                failed_unattended: false,
                reported: false,
            }),
            receiving: Mutex::new(HashMap::default()),
            receiving_only: AtomicU64::new(RECEIVING_NONE),
            waiting: AtomicBool::new(false),
            label_at: AtomicUsize::new(0),
            cancel_requested: AtomicBool::new(false),
            cancel_delivered: AtomicBool::new(false),
        }
        .counted()
    }

    fn counted(self) -> Self {
        RECORDS_ALIVE.fetch_add(1, Ordering::Relaxed);
        self
    }

    /// How many process records exist in this OS process (every runtime's, alive or
    /// finished but still referenced): what a leak check counts.
    pub fn records_alive() -> usize {
        RECORDS_ALIVE.load(Ordering::Relaxed)
    }

    #[inline]
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The process id (1 is the main script).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Where the process was spawned (`main`, or `file.lua:12`).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The process's mailbox (`p:send` / `lutra.receive`).
    pub fn mailbox(&self) -> &Arc<Channel> {
        &self.mailbox
    }

    /// The outcome so far.
    pub fn outcome(&self) -> Outcome {
        self.lock().outcome.clone()
    }

    /// Records how the process ended (as cancelled if a cancellation was raised in
    /// it, whatever `outcome` says), wakes its joiners, tells its monitors and acts on
    /// its links (`watch.rs`).
    pub fn finish(self: &Arc<Self>, outcome: Outcome) {
        let mut state = self.lock();
        let outcome = match &state.cancel {
            Cancel::Delivered(message) => Outcome::Failed(message.to_string()),
            _ => outcome,
        };
        state.cancelled = matches!(state.cancel, Cancel::Delivered(_));
        // A monitor is told of the failure: it is attended to, as by a join.
        state.joined |= !state.monitors.is_empty();
        state.failed_unattended = matches!(outcome, Outcome::Failed(_))
            && !state.cancelled
            && state.joiners.is_empty()
            && !state.joined;
        state.outcome = outcome;
        state.waiting_on = None;
        state.waker = None;
        self.label_at.store(0, Ordering::Relaxed);
        // ORDERING: Release as the flag's other stores; clearing it publishes nothing a
        // reader needs (one that sees `false` answers `None` without reading the label), so
        // Relaxed would do.
        self.waiting.store(false, Ordering::Release);
        state.joiners.wake_all();
        let ended = self.ending_of(&mut state);
        drop(state);
        self.leave_channels();
        self.mailbox.close();
        self.tell_watchers(ended);
    }

    /// Notes that the process registered on `channel` as a receiver (already noted
    /// when it is the one channel noted: nothing to do).
    #[inline]
    pub(crate) fn note_receiving(&self, channel: &Arc<Channel>) {
        if self.receiving_only() != channel.id() {
            self.note_receiving_locked(channel);
        }
    }

    fn note_receiving_locked(&self, channel: &Arc<Channel>) {
        let mut receiving = self.lock_receiving();
        receiving
            .entry(channel.id())
            .or_insert_with(|| Arc::downgrade(channel));
        self.sum_up_receiving(&receiving);
    }

    /// Leaves every channel the process registered on as a receiver (its blocking
    /// call ended): a wake-up it did not use passes to another receiver.
    pub(crate) fn leave_channels(&self) {
        let mut channels = {
            let mut receiving = self.lock_receiving();
            if receiving.is_empty() {
                return;
            }
            let channels = std::mem::take(&mut *receiving);
            self.sum_up_receiving(&receiving);
            channels
        };
        for channel in channels.drain().filter_map(|(_, c)| c.upgrade()) {
            channel.leave(self.id);
        }
        // The emptied table keeps its allocation for the next wait (no allocation
        // per blocking call), unless a registration was noted meanwhile.
        let mut receiving = self.lock_receiving();
        if receiving.is_empty() {
            *receiving = channels;
        }
    }

    /// A blocking receive took its message from `channel`, giving up its registration
    /// there as it took: leaves the other channels it registered on, if any (as
    /// [`ProcessCore::leave_channels`]). `channel` itself needs no leave: its entry
    /// stays noted (module invariants), ready for the next wait there.
    #[inline]
    pub(crate) fn took_from(&self, channel: &Channel) {
        let only = self.receiving_only();
        if only != RECEIVING_NONE && only != channel.id() {
            self.leave_channels();
        }
    }

    #[inline]
    fn lock_receiving(&self) -> MutexGuard<'_, HashMap<u64, Weak<Channel>>> {
        self.receiving.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `receiving_only` (module invariants).
    #[inline]
    fn receiving_only(&self) -> u64 {
        // ORDERING: Relaxed: only the process itself stores it (module invariants),
        // one call at a time, so it reads back its own last store.
        self.receiving_only.load(Ordering::Relaxed)
    }

    /// Stores `receiving_only` for `receiving` as it is now (under its lock).
    fn sum_up_receiving(&self, receiving: &HashMap<u64, Weak<Channel>>) {
        let only = match receiving.len() {
            0 => RECEIVING_NONE,
            1 => receiving.keys().next().copied().unwrap_or(RECEIVING_MANY),
            _ => RECEIVING_MANY,
        };
        // ORDERING: as in `receiving_only`.
        self.receiving_only.store(only, Ordering::Relaxed);
    }

    /// The outcome if the process has ended (marking it joined); otherwise registers
    /// `waiter` and returns `None`.
    /// `bool`: whether it ended cancelled.
    pub(crate) fn poll_join(&self, waiter: Option<Waiter>) -> Option<(Outcome, bool)> {
        let mut state = self.lock();
        if matches!(state.outcome, Outcome::Running) {
            if let Some(waiter) = waiter {
                state.joiners.register(waiter);
            }
            return None;
        }
        state.joined = true;
        Some((state.outcome.clone(), state.cancelled))
    }

    /// Whether the process failed and nobody joined it (reported at exit).
    pub fn failed_unjoined(&self) -> Option<String> {
        let state = self.lock();
        match (&state.outcome, state.joined) {
            (Outcome::Failed(message), false) if !state.cancelled => Some(message.clone()),
            _ => None,
        }
    }

    /// The error to report now, once: the process failed while nobody waited to
    /// join it (luaproc prints a failing process's error at once). `None` if it did
    /// not fail so, was joined meanwhile, or was reported already.
    pub(crate) fn claim_report(&self) -> Option<String> {
        let mut state = self.lock();
        match &state.outcome {
            Outcome::Failed(message)
                if state.failed_unattended && !state.joined && !state.reported =>
            {
                let message = message.clone();
                state.reported = true;
                Some(message)
            }
            _ => None,
        }
    }

    /// Whether the process's error has been reported already.
    pub fn was_reported(&self) -> bool {
        self.lock().reported
    }

    /// Notes what the process is about to wait on (`None` once it stops waiting).
    #[inline]
    pub fn set_waiting_on(&self, what: Option<Arc<str>>) {
        match what {
            Some(label) => self.note_waiting_on(&label),
            // ORDERING: as the clear when the process ends: nothing to publish.
            None => self.waiting.store(false, Ordering::Release),
        }
    }

    /// Notes that the process is about to wait on `label` (kept, not copied, when it
    /// is the label of its last wait).
    #[inline]
    pub(crate) fn note_waiting_on(&self, label: &Arc<str>) {
        let address = Arc::as_ptr(label).cast::<u8>() as usize;
        // ORDERING: Relaxed: the process alone stores its labels (module invariants),
        // so it reads back its own last store.
        if self.label_at.load(Ordering::Relaxed) != address {
            self.store_label(label, address);
        }
        // ORDERING: Release, after the label's store (under the lock): a reader that
        // sees the flag set sees this label or a later one.
        self.waiting.store(true, Ordering::Release);
    }

    /// Stores `label`, at `address`, as what the process waits on (a wait on another
    /// label than the last one).
    #[cold]
    fn store_label(&self, label: &Arc<str>, address: usize) {
        self.lock().waiting_on = Some(label.clone());
        // ORDERING: as the load in `note_waiting_on`.
        self.label_at.store(address, Ordering::Relaxed);
    }

    /// What the process waits on, if it is blocked.
    pub fn waiting_on(&self) -> Option<String> {
        // ORDERING: pairs with the Release store in `note_waiting_on`; the label itself is
        // then read under the lock.
        if !self.waiting.load(Ordering::Acquire) {
            return None;
        }
        self.lock().waiting_on.as_deref().map(str::to_owned)
    }
}

impl Drop for ProcessCore {
    fn drop(&mut self) {
        RECORDS_ALIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::Value;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    /// A waker that counts its wake-ups.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            // ORDERING: a test's counter, read on the thread that woke it.
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Registers `process` as a receiver on the empty `channel`, as a blocking
    /// receive does, woken through `count`.
    fn wait_on(process: &ProcessCore, channel: &Arc<Channel>, count: &Arc<Count>) {
        let waiter = Waiter {
            id: process.id(),
            waker: Waker::from(count.clone()),
        };
        assert!(matches!(
            channel.poll_receive(Some(waiter)),
            crate::channel::ReceivePoll::Empty
        ));
        process.note_receiving(channel);
    }

    fn one() -> Message {
        Message::of(vec![Value::Integer(1)])
    }

    /// A receive that takes from the one channel it waits on keeps it noted (no
    /// lock, no leave); a wait on it again notes nothing new.
    #[test]
    fn taking_from_the_one_channel_noted_keeps_it() {
        let process = ProcessCore::new(7, "test".into(), 0);
        let channel = Arc::new(Channel::new(0));
        wait_on(&process, &channel, &Arc::default());
        assert_eq!(process.receiving_only(), channel.id());
        process.took_from(&channel);
        process.note_receiving(&channel);
        assert_eq!(process.receiving_only(), channel.id());
        assert_eq!(process.lock_receiving().len(), 1);
    }

    /// A receive that waited on two channels (a select) and took from one leaves the
    /// other: a message sent there afterwards wakes nobody.
    #[test]
    fn taking_from_one_of_two_leaves_the_other() {
        let process = ProcessCore::new(7, "test".into(), 0);
        let (taken, other) = (Arc::new(Channel::new(0)), Arc::new(Channel::new(0)));
        let woken = Arc::new(Count::default());
        wait_on(&process, &taken, &Arc::default());
        wait_on(&process, &other, &woken);
        assert_eq!(process.receiving_only(), RECEIVING_MANY);
        process.took_from(&taken);
        assert_eq!(process.receiving_only(), RECEIVING_NONE);
        assert!(process.lock_receiving().is_empty());
        other.start_send(one()).unwrap();
        assert_eq!(
            woken.0.load(Ordering::Relaxed),
            0,
            "the other channel was left"
        );
    }

    /// Leaving every channel empties the summary; noting one again names it.
    #[test]
    fn leaving_empties_the_summary() {
        let process = ProcessCore::new(7, "test".into(), 0);
        let channel = Arc::new(Channel::new(0));
        let woken = Arc::new(Count::default());
        wait_on(&process, &channel, &woken);
        process.leave_channels();
        assert_eq!(process.receiving_only(), RECEIVING_NONE);
        channel.start_send(one()).unwrap();
        assert_eq!(woken.0.load(Ordering::Relaxed), 0, "the channel was left");
        process.note_receiving(&channel);
        assert_eq!(process.receiving_only(), channel.id());
    }
}
