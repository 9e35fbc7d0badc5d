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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::Waker;

/// Process records alive in this OS process (see [`ProcessCore::records_alive`]).
static RECORDS_ALIVE: AtomicUsize = AtomicUsize::new(0);

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
    joined: bool,
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

    /// Notes that the process registered on `channel` as a receiver.
    #[inline]
    pub(crate) fn note_receiving(&self, channel: &Arc<Channel>) {
        self.lock_receiving()
            .entry(channel.id())
            .or_insert_with(|| Arc::downgrade(channel));
    }

    /// Leaves every channel the process registered on as a receiver (its blocking
    /// call ended): a wake-up it did not use passes to another receiver.
    pub(crate) fn leave_channels(&self) {
        let mut channels = {
            let mut receiving = self.lock_receiving();
            if receiving.is_empty() {
                return;
            }
            std::mem::take(&mut *receiving)
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
        {
            let receiving = self.lock_receiving();
            let only_this = match receiving.len() {
                0 => true,
                1 => receiving.contains_key(&channel.id()),
                _ => false,
            };
            if only_this {
                return;
            }
        }
        self.leave_channels();
    }

    #[inline]
    fn lock_receiving(&self) -> MutexGuard<'_, HashMap<u64, Weak<Channel>>> {
        self.receiving.lock().unwrap_or_else(|p| p.into_inner())
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
            self.lock().waiting_on = Some(label.clone());
            self.label_at.store(address, Ordering::Relaxed);
        }
        // ORDERING: Release, after the label's store (under the lock): a reader that
        // sees the flag set sees this label or a later one.
        self.waiting.store(true, Ordering::Release);
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
