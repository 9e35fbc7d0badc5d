//! One channel's state and its operations, none of which blocks: a blocking operation
//! is a loop in Lua (`prelude.lua`) that polls, and parks its process when told to
//! wait, having left a waker here.
//!
//! # Invariants
//! - Messages carry consecutive sequence numbers from `next_sequence`; the queue holds
//!   them in order. `received` is one past the sequence of the last message taken, so
//!   message `s` was delivered iff `received > s`.
//! - A sender of message `s` on a channel of capacity `c` may return once
//!   `received + c > s` (capacity 0: once its message was taken — a rendezvous).
//! - Closing removes the messages whose senders are still waiting (`s >= received +
//!   c`): those sends fail with "closed"; messages whose sends returned stay and are
//!   delivered.
//!
//! # Protocol (no lost wake-up)
//! A poll that finds nothing registers its waiter under the channel's lock; every
//! change (message in, message out, close) wakes the registered waiters under the same
//! lock. The scheduler's `notified` flag covers a wake-up that arrives between the
//! registration and the process's park.

use crate::channel::{WaitList, Waiter};
use crate::transfer::Message;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

static NEXT_CHANNEL_ID: AtomicU64 = AtomicU64::new(1);

/// A channel shared by every process that holds it.
#[derive(Debug)]
pub struct Channel {
    id: u64,
    capacity: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<(u64, Message)>,
    next_sequence: u64,
    received: u64,
    closed: bool,
    receivers: WaitList,
    senders: WaitList,
}

/// Where a send stands.
#[derive(Debug, PartialEq, Eq)]
pub enum SendPoll {
    /// Delivered (rendezvous) or buffered: the sender may go on.
    Sent,
    /// The channel was closed before the message could be delivered.
    Closed,
    /// Still waiting; the waiter was registered.
    Wait,
}

/// What a receive found.
#[derive(Debug)]
pub enum ReceivePoll {
    /// A message.
    Message(Message),
    /// Closed and drained.
    Closed,
    /// Nothing yet (the waiter, if any, was registered).
    Empty,
}

impl Channel {
    /// A new open channel; `capacity` 0 makes sends rendezvous with receives.
    pub fn new(capacity: usize) -> Self {
        Self {
            id: NEXT_CHANNEL_ID.fetch_add(1, Ordering::Relaxed),
            capacity,
            state: Mutex::new(State::default()),
        }
    }

    /// The channel's id (unique in this OS process).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The capacity given at creation.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Enqueues `message` and returns its sequence number, to be polled with
    /// [`Channel::poll_send`]. Fails (handing the message back) when closed.
    pub fn start_send(&self, message: Message) -> Result<u64, Message> {
        let mut state = self.lock();
        if state.closed {
            return Err(message);
        }
        let sequence = state.next_sequence;
        state.next_sequence += 1;
        state.queue.push_back((sequence, message));
        state.receivers.wake_all();
        Ok(sequence)
    }

    /// Whether the send of message `sequence` is complete; registers `waiter` if not.
    pub(crate) fn poll_send(&self, sequence: u64, waiter: Option<Waiter>) -> SendPoll {
        let mut state = self.lock();
        if state.received + self.capacity as u64 > sequence {
            return SendPoll::Sent;
        }
        if state.closed {
            return SendPoll::Closed;
        }
        if let Some(waiter) = waiter {
            state.senders.register(waiter);
        }
        SendPoll::Wait
    }

    /// Takes the oldest message, if any; registers `waiter` when there is none.
    pub(crate) fn poll_receive(&self, waiter: Option<Waiter>) -> ReceivePoll {
        let mut state = self.lock();
        if let Some((sequence, message)) = state.queue.pop_front() {
            state.received = sequence + 1;
            state.senders.wake_all();
            return ReceivePoll::Message(message);
        }
        if state.closed {
            return ReceivePoll::Closed;
        }
        if let Some(waiter) = waiter {
            state.receivers.register(waiter);
        }
        ReceivePoll::Empty
    }

    /// Whether a receive would not wait (a message is queued, or the channel is closed).
    pub fn is_ready(&self) -> bool {
        let state = self.lock();
        !state.queue.is_empty() || state.closed
    }

    /// Whether the channel was closed.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Closes the channel (idempotent): waiting senders fail, receivers drain what was
    /// sent and then see "closed".
    pub fn close(&self) {
        let mut state = self.lock();
        if state.closed {
            return;
        }
        state.closed = true;
        let keep_below = state.received + self.capacity as u64;
        state.queue.retain(|(sequence, _)| *sequence < keep_below);
        state.senders.wake_all();
        state.receivers.wake_all();
    }

    /// Messages queued (including those whose senders still wait).
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// Whether no message is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
