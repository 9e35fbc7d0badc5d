//! The worker run loop: take a runnable task, resume it, act on how it stopped.
//!
//! # Protocol (one slice)
//! 1. Mark the task `RUNNING` and current; resume its body.
//! 2. `Yield`: the queue's yield (back of the worker's own queue, its front runs
//!    next, without leaving the worker's queue). `Switch(id)`, `SwitchToPriority(min)`:
//!    the queue's switch (the task it picks runs next). `Park`: store `PARKED`, then, if
//!    `notified` is set, CAS back to `RUNNABLE` and enqueue (see `task.rs`). `Done`:
//!    mark `DONE`, drop the body, count the task finished.
//! 3. The next task: the one step 2 picked, else the direct switch's, else the
//!    queue's `next` (which may sleep). Every `GLOBAL_QUEUE_INTERVAL` slices the global
//!    queue comes first: an unpinned task's yield `rotate`s through it, and `next`
//!    looks at it first.
//! 4. A worker other than worker 0 counts the slices whose task last ran on another
//!    worker; when its last window of slices crossed often with little run between
//!    crossings, it hands its tasks (the one step 3 chose too) to the global queue and
//!    rests (`rest.rs`).
//!
//! # Direct switch (Go's `runnext`, tokio's LIFO slot)
//! A task woken during a slice by the task this worker runs, and which this worker
//! may run (unpinned, or pinned here), goes to the worker's private slot instead of a
//! run queue (`context::Worker::hand_off`; a second one woken in the same slice sends the
//! first to the run queue). At the slice's end the worker empties the slot: if the
//! slice parked or finished, the woken task runs next, without the run queue's push
//! and pop (a rendezvous: the sender hands the value to the waiting receiver, then
//! parks); otherwise (yield, switch) it is pushed to the run queue as any wake-up
//! would have been, before the slice's own requeue, so the queue's order is kept.
//!
//! # Prompt wake-ups (a task woken from outside the workers)
//! A timer's or a host's wake-up pushes the task to the global queue and counts it
//! (`RunQueue::injected`). Each worker reads that count at every slice's end; when it
//! moved, the worker's next choices look at the global queue first, at every other
//! slice end (the others keep their own queue's order), until such a look finds the
//! global queue empty. A yield then takes the global queue's front and the yielding
//! task goes to the back of the worker's own queue (`yield_to_global`: it is not sent
//! to another worker as `rotate` does). So a task woken from outside runs at the end
//! of the slice running on the first worker to end one, or, behind `k` tasks queued
//! in the global queue before it, within `2k + 1` slice ends of one worker; a slice
//! lasts at most two preemption ticks (`lutra-lua`'s `preempt.rs`), and the push
//! calls `Builder::on_outside_wake`'s hook, with which a client may end long slices
//! sooner.
//!
//! # Invariants
//! - The slot is empty between slices: a woken task waits in it (seen by no thief)
//!   at most until the end of the slice that woke it, and a worker never looks for
//!   work or sleeps with a task in it.
//! - Fairness: at most `MAX_HANDOFFS` slices in a row run from the slot, and never the
//!   slice whose turn it is to look at the global queue first; then the woken task
//!   takes the run queue (waking one sleeper, like any push). Two tasks that keep
//!   waking each other cannot starve the worker's queue or the global queue.
//! - A task run from the slot is `RUNNABLE` (its waker's CAS) and in no queue: it is
//!   handed to this worker, as a popped task is.
//! # Blocked calls (a carrier losing its seat, `seat.rs`, `carrier.rs`)
//! The loop runs on whichever carrier thread holds the worker's seat. Each slice is
//! bracketed by `Seat::begin_slice` and `Seat::end_slice`; a monitor may retake the
//! seat in between (the slice blocked in a call) and give it to a spare carrier,
//! which runs this same loop for the same index. When the old carrier's slice ends,
//! `end_slice` fails: it touches nothing of the seat's (its private buffer, the
//! queue's owner operations), pushes the slice's task (unless it parked or ended),
//! the direct switch's slot and `tm` mode's thread buffer to the shared queues, and
//! returns to the pool. Loop-local state (tick, crossings, prompt wake-ups) starts
//! afresh on the new carrier.
//!
//! # Invariants
//! - A worker leaves only between slices: when the runtime shuts down, or when the
//!   requested worker count drops below its index + 1. A task it picked but did not
//!   start goes back to its queue; a leaving worker hands its unpinned tasks (those of
//!   its private buffer too) to the global queue (`retire`).
//! - The worker's private buffer (`queue::Private`) lives in the worker's seat and is
//!   lent to the queue's owner operations only, by the carrier holding the seat,
//!   between slices: no two threads touch it at once (`seat.rs`).

use crate::carrier::{CarrierRecord, Left};
use crate::context::Worker;
use crate::queue::Private;
use crate::rest::Crossings;
use crate::seat::Seat;
use crate::shared::Shared;
use crate::task::{DONE, NO_WORKER, PARKED, RUNNABLE, RUNNING, Step, TaskCore};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Slices between two looks at the global queue first (tokio's and Go's 61: prime,
/// so it does not fall into step with task patterns).
const GLOBAL_QUEUE_INTERVAL: u32 = 61;

/// Slices in a row run from the direct switch's slot before a woken task takes the
/// run queue instead. A rendezvous costs one slice: 64 of them are tens of
/// microseconds, which bounds what the worker's other tasks wait, while a run-queue
/// round trip (a transaction each way in `tm` mode) is paid once per 65 messages
/// rather than once per 17.
const MAX_HANDOFFS: u32 = 64;

/// The task a slice's end chose to run next, and whether it came from the direct
/// switch's slot.
type Chosen = Option<(Arc<TaskCore>, bool)>;

/// Worker `index`'s loop, run by carrier `carrier` holding the seat with word `held`
/// (`seat.rs`), until the worker must stop (the seat is left vacant) or a monitor
/// retakes the seat during a slice (the seat is no longer this carrier's).
pub(crate) fn run(
    shared: &Arc<Shared>,
    carrier: &Arc<CarrierRecord>,
    index: usize,
    mut held: u64,
) -> Left {
    let worker = Worker::new(shared.clone(), index, carrier.clone());
    let _entered = worker.enter();
    let seat = shared.seat(index);
    loop {
        match run_held(&worker, seat, held) {
            Held::Lost => return Left::Retaken,
            Held::Leaving(last) => held = last,
        }
        // SAFETY: this carrier holds the seat (`held` is current), between slices.
        shared.queue.retire(index, unsafe { seat.private() });
        seat.vacate(held);
        // ORDERING: `vacate` is SeqCst, then the worker count is read (SeqCst): a
        // `set_workers` that raised the count either sees the seat vacant and starts
        // a carrier for it, or is seen here (see `seat.rs`).
        if shared.worker_must_stop(index) {
            return Left::Stopped;
        }
        match seat.claim(carrier.id) {
            Some(again) => held = again,
            None => return Left::Stopped,
        }
    }
}

/// How the loop of a held seat ended.
enum Held {
    /// The worker must stop; the seat's word is still this carrier's `HELD` word.
    Leaving(u64),
    /// A monitor retook the seat during a slice.
    Lost,
}

/// The loop proper (see [`run`]).
fn run_held(worker: &Worker, seat: &Seat, mut held: u64) -> Held {
    let (shared, index) = (worker.shared(), worker.index());
    let stop = || shared.worker_must_stop(index);
    let mut tick: u32 = 0;
    let mut handoffs: u32 = 0;
    let mut next: Chosen = None;
    let slices = &shared.queue.resting().slices;
    let mut crossings = (index > 0).then(|| Crossings::new(Instant::now(), slices.total()));
    let mut prompt = PromptWake::new();
    loop {
        tick = tick.wrapping_add(1);
        let global_first = tick.is_multiple_of(GLOBAL_QUEUE_INTERVAL);
        let task = match next.take() {
            Some((task, handed)) if !stop() => {
                handoffs = if handed { handoffs + 1 } else { 0 };
                task
            }
            Some((task, _)) => {
                shared.queue.requeue(index, task);
                return Held::Leaving(held);
            }
            None => {
                handoffs = 0;
                let first = global_first || prompt.due(shared.queue.injected());
                // SAFETY: this carrier holds the seat, between slices.
                let private = unsafe { seat.private() };
                match shared.queue.next(index, private, first, stop) {
                    Some(task) => task,
                    None => return Held::Leaving(held),
                }
            }
        };
        let may_hand_off =
            handoffs < MAX_HANDOFFS && !tick.wrapping_add(1).is_multiple_of(GLOBAL_QUEUE_INTERVAL);
        let crossed = crossed_to(&task, index);
        let turn = Turn {
            global_first,
            may_hand_off,
        };
        let slice = seat.begin_slice(held);
        let step = resume(worker, &task);
        let Some(after) = seat.end_slice(slice) else {
            hand_back(worker, task, step);
            return Held::Lost;
        };
        held = after;
        // SAFETY: this carrier holds the seat again (`end_slice` succeeded).
        let private = unsafe { seat.private() };
        next = end_slice(worker, private, task, step, turn, &mut prompt);
        slices.publish(index, tick);
        if let Some(crossings) = crossings.as_mut()
            && let Some(rest) = crossings.count(crossed, || slices.total())
        {
            let chosen = next.take().map(|(task, _)| task);
            let deadline = Instant::now() + rest;
            let end = shared.queue.rest(index, private, chosen, deadline, stop);
            crossings.after_rest(Instant::now(), slices.total(), end);
        }
    }
}

/// Records that `task` runs on worker `index`; whether it last ran on another one.
fn crossed_to(task: &TaskCore, index: usize) -> bool {
    let last = task.last_worker.load(Ordering::Relaxed);
    if last == index {
        return false;
    }
    task.last_worker.store(index, Ordering::Relaxed);
    last != NO_WORKER
}

/// Where a worker in a run of yields looks first for tasks woken from outside (see
/// the module's "Prompt wake-ups").
///
/// # Invariants
/// - `seen` is the last `RunQueue::injected` count read (0 before the first);
///   `pending` holds from a read
///   that found it moved until a look at the global queue found it empty.
/// - `skip` alternates while `pending` holds: one slice end in two looks there first.
struct PromptWake {
    seen: u64,
    pending: bool,
    skip: bool,
}

impl PromptWake {
    /// A worker's at its start: any task pushed from outside before it started (the
    /// first processes of a host, spawned before its thread runs) counts as new.
    fn new() -> Self {
        Self {
            seen: 0,
            pending: false,
            skip: false,
        }
    }

    /// Whether this slice end looks at the global queue first, `injected` being the
    /// count read now.
    #[inline]
    fn due(&mut self, injected: u64) -> bool {
        if injected != self.seen {
            self.seen = injected;
            self.pending = true;
        }
        if !self.pending {
            return false;
        }
        self.skip = !self.skip;
        self.skip
    }

    /// A look at the global queue first found a task there (or not: the wake-ups
    /// counted so far have all been taken).
    fn found(&mut self, found: bool) {
        if !found {
            self.pending = false;
            self.skip = false;
        }
    }
}

/// What a slice's end may do besides its own queue: the global queue's regular turn,
/// and the direct switch.
#[derive(Clone, Copy)]
struct Turn {
    global_first: bool,
    may_hand_off: bool,
}

/// Resumes `task` for one slice on `worker`; returns how the slice ended.
fn resume(worker: &Worker, task: &Arc<TaskCore>) -> Step {
    // ORDERING: only the `PARKED` store takes part in the park/unpark protocol's
    // store-then-load pair (task.rs); this store publishes nothing (the task came, and
    // goes, through the run queue, which orders its data), so it needs only the word's
    // modification order, where it follows the `RUNNABLE` that queued the task (the
    // queue's hand-over orders that before it) and an unparker's CAS from `PARKED` then
    // fails. Relaxed: a SeqCst store is a locked instruction on x86, one per slice.
    task.state.store(RUNNING, Ordering::Relaxed);
    worker.set_task(Some(task));
    let step = {
        let mut body = task.body.lock();
        body.as_mut().map_or(Step::Done, |body| body.resume())
    };
    worker.set_task(None);
    step
}

/// Acts on how `task`'s slice ended (`step`), on a worker that still holds its seat;
/// returns the task to run next, if the slice's end chose one (and whether the direct
/// switch did: only if `turn.may_hand_off`).
fn end_slice(
    worker: &Worker,
    private: &mut Private,
    task: Arc<TaskCore>,
    step: Step,
    turn: Turn,
    prompt: &mut PromptWake,
) -> Chosen {
    let Turn {
        global_first,
        may_hand_off,
    } = turn;
    let (shared, index) = (worker.shared(), worker.index());
    shared.queue.end_slice(index, private);
    let woken = worker.take_handoff();
    let handed = if may_hand_off && matches!(step, Step::Park | Step::Done) {
        woken.map(|woken| {
            shared.count_direct_switch();
            (woken, true)
        })
    } else {
        if let Some(woken) = woken {
            shared.queue.push_own(index, private, woken);
        }
        None
    };
    let chosen = |next| Some((next, false));
    match step {
        Step::Yield => {
            // ORDERING: as the `RUNNING` store in `resume`: no unparker acts on `RUNNABLE`.
            task.state.store(RUNNABLE, Ordering::SeqCst);
            chosen(if global_first && task.home.is_none() {
                shared.queue.rotate(index, private, task)
            } else if prompt.due(shared.queue.injected()) {
                let (next, found) = shared.queue.yield_to_global(index, private, task);
                prompt.found(found);
                next
            } else {
                shared.queue.yield_task(index, private, task)
            })
        }
        Step::Switch(tx_id) => {
            // ORDERING: as the `RUNNING` store in `resume`: no unparker acts on `RUNNABLE`.
            task.state.store(RUNNABLE, Ordering::SeqCst);
            let (next, switched) = shared.queue.switch(index, private, task, tx_id);
            if switched {
                shared.count_switch();
            }
            chosen(next)
        }
        Step::SwitchToPriority(min) => {
            // ORDERING: as the `RUNNING` store in `resume`: no unparker acts on `RUNNABLE`.
            task.state.store(RUNNABLE, Ordering::SeqCst);
            let (next, switched) = shared
                .queue
                .switch_where(index, private, task, |other| other.priority() >= min);
            if switched {
                shared.count_switch();
            }
            chosen(next)
        }
        Step::Park => {
            if let Some(task) = park(task) {
                shared.queue.push_own(index, private, task);
            }
            handed
        }
        Step::Done => {
            finish(shared, &task);
            handed
        }
    }
}

/// Parks `task`, whose slice ended in `Park`; gives it back if a wake-up came
/// meanwhile (it is runnable again and must be queued: see `task.rs`).
fn park(task: Arc<TaskCore>) -> Option<Arc<TaskCore>> {
    // ORDERING: the worker's half of the park/unpark protocol (task.rs): store
    // `PARKED`, then load `notified`, against `TaskWaker::unpark` (suspend.rs), which
    // stores `notified`, then CASes `state`. A store then a load on each side, all
    // SeqCst: in the single total order one side's load comes after the other's
    // store, so the worker sees `notified` or the unparker's CAS sees `PARKED`; the
    // CAS below lets exactly one of them enqueue.
    task.state.store(PARKED, Ordering::SeqCst);
    // ORDERING: the load and CAS of the pair described at the `PARKED` store above.
    let woken = task.notified.load(Ordering::SeqCst)
        && task
            .state
            .compare_exchange(PARKED, RUNNABLE, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
    woken.then_some(task)
}

/// Marks `task` finished and drops its body.
fn finish(shared: &Shared, task: &TaskCore) {
    // ORDERING: as the `RUNNING` store in `resume`: an unparker's CAS from `PARKED`
    // fails on `DONE`; the join handle publishes the result on its own.
    task.state.store(DONE, Ordering::SeqCst);
    task.body.lock().take();
    shared.task_finished();
}

/// The end of a slice whose seat a monitor retook meanwhile (`seat.rs`, step 4):
/// this carrier no longer owns the worker's private buffer, so what the slice made
/// runnable on this thread, the direct switch's slot and the task itself go to the
/// shared run queues (as a push from worker `index` outside a slice), where the
/// seat's new carrier, or any idle worker, finds them.
#[cold]
fn hand_back(worker: &Worker, task: Arc<TaskCore>, step: Step) {
    let (shared, index) = (worker.shared(), worker.index());
    shared.queue.end_slice_lost(index);
    if let Some(woken) = worker.take_handoff() {
        shared.queue.push(woken, Some(index));
    }
    let runnable = match step {
        Step::Yield | Step::Switch(_) | Step::SwitchToPriority(_) => {
            // ORDERING: as the `RUNNING` store in `resume`: no unparker acts on `RUNNABLE`.
            task.state.store(RUNNABLE, Ordering::SeqCst);
            Some(task)
        }
        Step::Park => park(task),
        Step::Done => {
            finish(shared, &task);
            None
        }
    };
    if let Some(task) = runnable {
        shared.queue.push(task, Some(index));
    }
}
