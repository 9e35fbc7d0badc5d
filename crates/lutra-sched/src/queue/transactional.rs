//! The run queues on transactions: each worker's queue and the global queue a
//! [`TxList`] of tasks on the runtime's private engine (seed 001's port, without its
//! busy-waits). Idle workers sleep in the engine's `retry`, each on a word of its own,
//! so a push wakes exactly the sleeper it chose.
//!
//! A worker's own queue is its shared list plus its [`Private`] buffer, which only it
//! touches: the tasks it yielded wait there, so a yield between busy tasks runs no
//! transaction and makes no system call (two loads, a pop and a push: the fast path
//! below), as a yield in lock mode takes only its own uncontended mutex.
//!
//! # Invariants
//! - Each node holds its own reference to its task, dropped when the node is
//!   released (after every transaction that could still read it has ended): scans
//!   read a task's pinning, transaction id and priority in place, so the task must
//!   outlive any attempt that can reach its node. Taking a task clones the reference.
//! - `asleep` of worker `w` is 1 exactly while `w` is registered as a sleeper;
//!   `sleeping` is the number of such workers. Both change only in transactions.
//! - `alarm` changes (in a transaction) after every change of the stop condition
//!   (shutdown, fewer workers): `wake_all`.
//! - A worker whose `Private` holds a task never sleeps (`next` takes from it first);
//!   a leaving worker empties it into the lists (`retire`). So every task there is run
//!   by that worker, or handed to a sleeper (fast path, step 3): none is stranded.
//! - The thread buffer of step 0 holds tasks only during a slice of its worker: the
//!   slice's end empties it, before the worker chooses its next task (into
//!   `Private`, or, when the worker's seat was retaken during the slice, into the
//!   shared lists: `end_slice_lost`, since the thread no longer owns `Private`).
//! - A worker leaves (`next` gives `None`) only once `stop()` holds.
//!
//! # Protocol (idle wait, no lost wake-up)
//! 1. Worker `w`, in one transaction: read `alarm`; if `stop()`, leave; take a task
//!    from its own list (and the rest of that list, for its `Private`, in order), the
//!    global list, or (unpinned) another worker's list; if there is none, write
//!    `asleep[w] = 1` and `sleeping + 1` and commit.
//! 2. Worker `w`, in a second transaction: read `asleep[w]`; while it is 1, `retry`
//!    (the thread parks until a commit writes it). Then start over at 1.
//! 3. A push, in the transaction that links the task: read `sleeping`; if non-zero,
//!    choose a sleeper that may run the task (for a pinned task only its worker),
//!    write its `asleep` to 0 and `sleeping − 1`.
//!
//! Step 1 and the push are transactions on common words (the lists the push writes,
//! which step 1 read; `sleeping`, which both read and step 1 writes): one is
//! serialised before the other. If the push comes first, step 1 finds the task; if
//! step 1 does, the push sees the registration and clears `asleep[w]`, whose commit
//! wakes step 2 (or step 2 reads 0 and never waits).
//!
//! # Protocol (fast path: the owner's yield, switch, rotation and `next`)
//! 0. A task that the running task makes runnable on its worker (woken, spawned)
//!    while `sleeping` loads 0 waits in a buffer of the worker's thread, not in a
//!    transaction; at the slice's end the worker moves it to the back of `Private`
//!    and catches up (1 to 3). Likewise a task woken and not run next, or notified
//!    while it parked, goes to `Private` at once. While a worker sleeps, a push is a
//!    transaction that wakes it (idle protocol, step 3).
//! 1. Load, without a transaction ([`peek`]), the head of its own list and
//!    `sleeping`. Both 0 (the common case): go to 4.
//! 2. Its own list holds a task: in one transaction take every task of it, then
//!    append them to `Private` (in order: the FIFO of the worker's queue is kept).
//! 3. `sleeping` > 0: in one transaction, if a worker is still registered, clear its
//!    `asleep`, decrement `sleeping` and link to that worker's own list the back half
//!    (rounded up) of `Private`'s unpinned tasks.
//! 4. Yield: `Private`'s front runs next and the yielding task goes to its back (it
//!    runs on if `Private` is empty); switch: the first suitable task of `Private`;
//!    `next`: `Private`'s front, or, if step 3 handed all of it over, the idle
//!    protocol (never "stop" while the runtime goes on).
//!
//! The loads are hints, never trusted for safety: a stale 0 delays steps 2 and 3 to
//! the worker's next slice end (a push that happened before the load is seen: it
//! loads what the push's commit wrote back). What a worker about to sleep cannot take
//! from a busy worker's `Private` it is handed at that worker's next slice end (steps
//! 1 and 3), which is also when a task pushed to the busy worker's list reaches its
//! `Private` (step 2): so tasks woken for a worker wait behind those it yielded before,
//! as in one FIFO.
//!
//! Stopping: the stop condition is stored (SeqCst), then `wake_all` writes `alarm`
//! and clears every `asleep`. Step 1 read `alarm`: if `wake_all` commits before
//! step 1 does, step 1 is invalidated and re-runs, and sees the condition; otherwise
//! `wake_all` finds `w` registered and clears it.

use super::slots::Slots;
use super::{Private, TaskQueue, switch_in, take_turn};
use crate::context;
use crate::sync::thread_local;
use crate::sync_mode::SITE_RUN_QUEUE;
use crate::sync_mode::engine::{Tx, TxEngine, peek};
use crate::sync_mode::list::{Node, TxList, release_dropping_item};
use crate::task::TaskCore;
use lutra_stm::{Abort, TVar};
use std::cell::{Cell, RefCell};
use std::sync::Arc;

thread_local! {
    /// The tasks that the slice running on this thread's worker made runnable on it
    /// while no worker slept (fast path, step 0), in order: its end moves them to the
    /// worker's `Private`.
    static MADE_RUNNABLE: RefCell<Vec<Arc<TaskCore>>> = const { RefCell::new(Vec::new()) };
    /// Whether `MADE_RUNNABLE` holds a task: what every slice's end reads (a plain
    /// thread-local word, cheaper to reach than the buffer).
    static ANY_MADE_RUNNABLE: Cell<bool> = const { Cell::new(false) };
}

/// One worker's queue and sleep word.
struct Local {
    tasks: TxList<Arc<TaskCore>>,
    asleep: TVar<usize>,
}

impl Default for Local {
    fn default() -> Self {
        Self {
            tasks: TxList::new(),
            asleep: TVar::new(0),
        }
    }
}

/// What step 1 of the idle protocol ended with.
enum Look {
    Found(Arc<TaskCore>),
    Stop,
    Registered,
}

/// Where a rotation found the task to run next.
enum Rotated {
    Global(Arc<TaskCore>),
    Private,
    Nowhere,
}

pub(crate) struct TransactionalQueue {
    engine: Arc<TxEngine>,
    locals: Slots<Local>,
    global: TxList<Arc<TaskCore>>,
    sleeping: TVar<usize>,
    alarm: TVar<usize>,
}

/// A new node for `task`, owned by the caller until a push commits.
fn node(task: Arc<TaskCore>) -> *mut Node<Arc<TaskCore>> {
    Node::new(task)
}

/// Frees a node that was never linked.
fn discard(node: *mut Node<Arc<TaskCore>>) {
    // SAFETY: from `Node::new`, never published (no committed attempt linked it), so
    // no transaction can reach it; released once, here.
    unsafe { release_dropping_item::<Arc<TaskCore>>(node as usize, 0) };
}

/// Takes the first task of `list` that satisfies `suits` (the node is freed once the
/// attempt commits; the clone is dropped again if it does not).
fn take(
    tx: &mut Tx<'_>,
    list: &TxList<Arc<TaskCore>>,
    suits: impl FnMut(&Arc<TaskCore>) -> bool,
) -> Result<Option<Arc<TaskCore>>, Abort> {
    let Some(found) = list.find(tx, suits)? else {
        return Ok(None);
    };
    let task = found.item().clone();
    let node = list.unlink(tx, found)?;
    // SAFETY: unlinked in this attempt, not pushed again; the node keeps its
    // reference until released (the module's invariant).
    unsafe { list.free(tx, node, release_dropping_item::<Arc<TaskCore>>)? };
    Ok(Some(task))
}

impl TransactionalQueue {
    pub(crate) fn new(engine: Arc<TxEngine>) -> Self {
        Self {
            engine,
            locals: Slots::new(),
            global: TxList::new(),
            sleeping: TVar::new(0),
            alarm: TVar::new(0),
        }
    }

    /// Step 3 of the protocol, inside the pushing transaction: wakes a sleeper that
    /// may run a task pinned to `home` (any sleeper if `None`).
    fn wake_in(&self, tx: &mut Tx<'_>, home: Option<usize>) -> Result<(), Abort> {
        let sleeping = tx.read(&self.sleeping)?;
        if sleeping == 0 {
            return Ok(());
        }
        let candidates = match home {
            Some(home) => home..home + 1,
            None => 0..self.locals.len(),
        };
        for worker in candidates {
            let asleep = &self.locals.get(worker).asleep;
            if tx.read(asleep)? == 1 {
                tx.write(asleep, 0)?;
                return tx.write(&self.sleeping, sleeping - 1);
            }
        }
        Ok(())
    }

    /// Step 1's look for `worker`: own and global list (in the order asked), then the
    /// first unpinned task of another worker's list.
    fn find(
        &self,
        tx: &mut Tx<'_>,
        worker: usize,
        global_first: bool,
        rest: &mut Vec<Arc<TaskCore>>,
    ) -> Result<Option<Arc<TaskCore>>, Abort> {
        let own = &self.locals.get(worker).tasks;
        if global_first && let Some(task) = take(tx, &self.global, |_| true)? {
            return Ok(Some(task));
        }
        if let Some(task) = take(tx, own, |_| true)? {
            // The rest of the own list comes along, in order (as in a catch-up).
            while let Some(next) = take(tx, own, |_| true)? {
                rest.push(next);
            }
            return Ok(Some(task));
        }
        if !global_first && let Some(task) = take(tx, &self.global, |_| true)? {
            return Ok(Some(task));
        }
        let workers = self.locals.len();
        for offset in 1..workers {
            let victim = &self.locals.get((worker + offset) % workers).tasks;
            if let Some(task) = take(tx, victim, |task| task.home.is_none())? {
                return Ok(Some(task));
            }
        }
        Ok(None)
    }

    /// Fast path, step 1: whether the owner of `local` has anything to catch up with
    /// (a task in its shared list, a sleeping worker), judged by two loads.
    #[inline]
    fn needs_catch_up(&self, local: &Local) -> bool {
        local.tasks.may_hold_a_node() || peek(&self.sleeping) > 0
    }

    /// Fast path, step 2 (owner only): moves every task of `worker`'s shared list to
    /// the back of `private`, in order; then, if a worker sleeps, hands it the back
    /// half of `private`'s unpinned tasks.
    #[cold]
    fn catch_up_slow(&self, worker: usize, private: &mut Private) {
        let tasks = &self.locals.get(worker).tasks;
        if tasks.may_hold_a_node() {
            let mut taken = Vec::new();
            self.engine.run(SITE_RUN_QUEUE, |tx| {
                taken.clear();
                while let Some(task) = take(tx, tasks, |_| true)? {
                    taken.push(task);
                }
                Ok(())
            });
            private.extend(taken);
        }
        if peek(&self.sleeping) > 0 {
            self.hand_over(private);
        }
    }

    /// Fast path, step 3: gives the back half (rounded up) of `private`'s unpinned
    /// tasks to one sleeping worker: linked to its own list, in the transaction that
    /// wakes it. They stay in `private` if no worker sleeps by then.
    fn hand_over(&self, private: &mut Private) {
        let unpinned = private.iter().filter(|task| task.home.is_none()).count();
        let mut given: Vec<Arc<TaskCore>> = Vec::with_capacity(unpinned.div_ceil(2));
        let mut at = private.len();
        while given.len() < unpinned.div_ceil(2) {
            at -= 1;
            if private[at].home.is_none() {
                given.push(private.remove(at).expect("an index below the length"));
            }
        }
        if given.is_empty() {
            return;
        }
        given.reverse();
        let nodes: Vec<_> = given.iter().map(|task| node(task.clone())).collect();
        let woken = self.engine.run(SITE_RUN_QUEUE, |tx| {
            let sleeping = tx.read(&self.sleeping)?;
            if sleeping == 0 {
                return Ok(false);
            }
            for worker in 0..self.locals.len() {
                let local = self.locals.get(worker);
                if tx.read(&local.asleep)? == 1 {
                    tx.write(&local.asleep, 0)?;
                    tx.write(&self.sleeping, sleeping - 1)?;
                    for &node in &nodes {
                        // SAFETY: the nodes are new; the list owns them once this
                        // commits.
                        unsafe { local.tasks.push_back(tx, node)? };
                    }
                    return Ok(true);
                }
            }
            Ok(false)
        });
        if !woken {
            nodes.into_iter().for_each(discard);
            private.extend(given);
        }
    }

    /// Fast path, step 0's end (owner only): the tasks made runnable during the slice
    /// go to the back of `private`, in order; then the catch-up.
    #[cold]
    fn take_made_runnable(&self, worker: usize, private: &mut Private) {
        ANY_MADE_RUNNABLE.with(|any| any.set(false));
        MADE_RUNNABLE.with(|made| private.extend(made.borrow_mut().drain(..)));
        self.catch_up(worker, private);
    }

    /// The fast path's catch-up (owner only; see the module's protocol).
    #[inline]
    fn catch_up(&self, worker: usize, private: &mut Private) {
        if self.needs_catch_up(self.locals.get(worker)) {
            self.catch_up_slow(worker, private);
        }
    }

    /// `next` while `private` holds a task and the runtime goes on: the global list's
    /// front on its turn, or `private`'s front (after the catch-up); never a sleep.
    /// `None` when the catch-up handed every task of `private` to a sleeper.
    fn next_private(
        &self,
        worker: usize,
        private: &mut Private,
        global_first: bool,
    ) -> Option<Arc<TaskCore>> {
        if global_first {
            let global = self
                .engine
                .run(SITE_RUN_QUEUE, |tx| take(tx, &self.global, |_| true));
            if global.is_some() {
                return global;
            }
        }
        self.catch_up(worker, private);
        private.pop_front()
    }

    /// Step 1 of the protocol.
    fn look(
        &self,
        worker: usize,
        global_first: bool,
        stop: &dyn Fn() -> bool,
        rest: &mut Vec<Arc<TaskCore>>,
    ) -> Look {
        let local = self.locals.get(worker);
        self.engine.run(SITE_RUN_QUEUE, |tx| {
            rest.clear();
            tx.read(&self.alarm)?;
            if stop() {
                return Ok(Look::Stop);
            }
            if let Some(task) = self.find(tx, worker, global_first, rest)? {
                return Ok(Look::Found(task));
            }
            tx.write(&local.asleep, 1)?;
            let sleeping = tx.read(&self.sleeping)?;
            tx.write(&self.sleeping, sleeping + 1)?;
            Ok(Look::Registered)
        })
    }
}

impl TaskQueue for TransactionalQueue {
    fn push(&self, task: Arc<TaskCore>, local: Option<usize>) {
        let home = task.home;
        if let Some(worker) = local
            && home.is_none_or(|home| home == worker)
            && context::in_slice()
            && peek(&self.sleeping) == 0
        {
            // Step 0 of the fast path: `local` is the calling thread's worker index
            // (the trait's contract), so this thread is worker `worker`, inside a
            // slice, whose end (`end_slice`) moves the task to its `Private`.
            MADE_RUNNABLE.with(|made| made.borrow_mut().push(task));
            ANY_MADE_RUNNABLE.with(|any| any.set(true));
            return;
        }
        let list = match home.or(local) {
            Some(worker) => &self.locals.get(worker).tasks,
            None => &self.global,
        };
        let node = node(task);
        self.engine.run(SITE_RUN_QUEUE, |tx| {
            // SAFETY: the node is new; the list owns it once this commits.
            unsafe { list.push_back(tx, node)? };
            self.wake_in(tx, home)
        });
    }

    fn yield_task(
        &self,
        worker: usize,
        private: &mut Private,
        current: Arc<TaskCore>,
    ) -> Arc<TaskCore> {
        self.catch_up(worker, private);
        take_turn(private, current)
    }

    fn rotate(
        &self,
        worker: usize,
        private: &mut Private,
        current: Arc<TaskCore>,
    ) -> Arc<TaskCore> {
        self.catch_up(worker, private);
        let local_next = !private.is_empty();
        let node = node(current.clone());
        let rotated = self.engine.run(SITE_RUN_QUEUE, |tx| {
            let rotated = match take(tx, &self.global, |_| true)? {
                Some(next) => Rotated::Global(next),
                None if local_next => {
                    self.wake_in(tx, None)?;
                    Rotated::Private
                }
                None => return Ok(Rotated::Nowhere),
            };
            // SAFETY: the node is new; the list owns it once this commits.
            unsafe { self.global.push_back(tx, node)? };
            Ok(rotated)
        });
        match rotated {
            Rotated::Global(next) => next,
            Rotated::Private => private.pop_front().expect("checked before the rotation"),
            Rotated::Nowhere => {
                discard(node);
                current
            }
        }
    }

    fn yield_to_global(
        &self,
        worker: usize,
        private: &mut Private,
        current: Arc<TaskCore>,
    ) -> (Arc<TaskCore>, bool) {
        self.catch_up(worker, private);
        let global = self
            .engine
            .run(SITE_RUN_QUEUE, |tx| take(tx, &self.global, |_| true));
        match global {
            Some(next) => {
                private.push_back(current);
                (next, true)
            }
            None => (take_turn(private, current), false),
        }
    }

    fn requeue(&self, worker: usize, current: Arc<TaskCore>) {
        let tasks = &self.locals.get(worker).tasks;
        let node = node(current);
        self.engine.run(SITE_RUN_QUEUE, |tx| {
            // SAFETY: the node is new; the list owns it once this commits.
            unsafe { tasks.push_back(tx, node) }
        });
    }

    fn switch_where(
        &self,
        worker: usize,
        private: &mut Private,
        current: Arc<TaskCore>,
        suits: &dyn Fn(&TaskCore) -> bool,
    ) -> (Arc<TaskCore>, bool) {
        self.catch_up(worker, private);
        switch_in(private, current, suits)
    }

    fn next(
        &self,
        worker: usize,
        private: &mut Private,
        global_first: bool,
        stop: &dyn Fn() -> bool,
    ) -> Option<Arc<TaskCore>> {
        if !private.is_empty() {
            if stop() {
                return None;
            }
            if let Some(task) = self.next_private(worker, private, global_first) {
                return Some(task);
            }
            // Its tasks went to a sleeper: look, as a worker without private tasks.
        }
        let asleep = &self.locals.get(worker).asleep;
        let mut rest = Vec::new();
        loop {
            match self.look(worker, global_first, stop, &mut rest) {
                Look::Found(task) => {
                    private.extend(rest);
                    return Some(task);
                }
                Look::Stop => return None,
                Look::Registered => self.engine.run(SITE_RUN_QUEUE, |tx| {
                    if tx.read(asleep)? == 1 {
                        tx.retry()
                    } else {
                        Ok(())
                    }
                }),
            }
        }
    }

    fn push_own(&self, worker: usize, private: &mut Private, task: Arc<TaskCore>) {
        private.push_back(task);
        self.catch_up(worker, private);
    }

    #[inline]
    fn end_slice(&self, worker: usize, private: &mut Private) {
        if ANY_MADE_RUNNABLE.with(Cell::get) {
            self.take_made_runnable(worker, private);
        }
    }

    fn end_slice_lost(&self, worker: usize) {
        ANY_MADE_RUNNABLE.with(|any| any.set(false));
        let made: Vec<_> = MADE_RUNNABLE.with(|made| made.borrow_mut().drain(..).collect());
        // Outside the slice now (the worker cleared its task): each push is a
        // transaction on the shared lists, which wakes a sleeper if one may run it.
        made.into_iter()
            .for_each(|task| self.push(task, Some(worker)));
    }

    fn retire(&self, worker: usize, private: &mut Private) {
        let tasks = &self.locals.get(worker).tasks;
        let nodes: Vec<_> = private.drain(..).map(node).collect();
        self.engine.run(SITE_RUN_QUEUE, |tx| {
            for &node in &nodes {
                // SAFETY: the nodes are new; the list owns them once this commits.
                unsafe { tasks.push_back(tx, node)? };
            }
            Ok(())
        });
        loop {
            let moved = self.engine.run(SITE_RUN_QUEUE, |tx| {
                let Some(found) = tasks.find(tx, |task| task.home.is_none())? else {
                    return Ok(false);
                };
                let node = tasks.unlink(tx, found)?;
                // SAFETY: unlinked in this attempt and linked once again here: the
                // global list owns it once this commits.
                unsafe { self.global.push_back_unlinked(tx, node)? };
                Ok(true)
            });
            if !moved {
                break;
            }
        }
        self.engine.run(SITE_RUN_QUEUE, |tx| self.wake_in(tx, None));
    }

    fn has_tasks(&self, worker: usize) -> bool {
        let tasks = &self.locals.get(worker).tasks;
        self.engine
            .run(SITE_RUN_QUEUE, |tx| Ok(!tasks.is_empty(tx)?))
    }

    fn wake_all(&self) {
        self.engine.run(SITE_RUN_QUEUE, |tx| {
            let alarm = tx.read(&self.alarm)?;
            tx.write(&self.alarm, alarm.wrapping_add(1))?;
            for worker in 0..self.locals.len() {
                let asleep = &self.locals.get(worker).asleep;
                if tx.read(asleep)? == 1 {
                    tx.write(asleep, 0)?;
                }
            }
            tx.write(&self.sleeping, 0)
        });
    }
}

/// Model checks of the queue itself on shuttle's scheduler: the real
/// `TransactionalQueue`, on a real private engine whose atomics, locks, parking and
/// thread-locals are shuttle's (lutra-stm's `shuttle` feature, and `sync.rs` here), so
/// both its protocols run as written: the idle protocol (look / register / `retry`,
/// and the push that wakes) and the fast path (private buffer, the tasks a slice makes
/// runnable, catch-up, hand-over). Two workers run the run loop's shape around the
/// queue (`next`; a slice that may make a task runnable through `push`, inside the
/// worker's context; `end_slice`; `yield_task`; `retire` when stopped); the main
/// thread pushes tasks as a host or a spawner does. The worker that finishes the last
/// task stores the stop condition and calls `wake_all`. A stranded task or a lost
/// wake-up leaves every worker asleep: shuttle reports the deadlock and the check
/// fails.
#[cfg(all(test, feature = "shuttle"))]
mod model {
    use super::TransactionalQueue;
    use crate::context::Worker;
    use crate::live::LiveTasks;
    use crate::queue::explore::explore;
    use crate::queue::{Private, RunQueue, TaskQueue};
    use crate::shared::Shared;
    use crate::sync_mode::engine::TxEngine;
    use crate::sync_mode::{SyncDomain, SyncMode};
    use crate::task::TaskCore;
    use shuttle::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use shuttle::thread;
    use std::sync::Arc;

    const WORKERS: usize = 2;

    /// Schedules explored per scheduler and check: each runs the engine's own
    /// transactions, hundreds of scheduling points.
    const ITERATIONS: usize = 300;

    /// Tasks that ran on one worker and later on the other, in every schedule explored
    /// (outside shuttle's world). Once run, a task is only in its worker's private
    /// buffer (a yield puts it there, stealing cannot reach it), so a task that
    /// changes worker was handed over (fast path, step 3).
    static HANDED_OVER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    /// A task to push: where it must run, the yields it makes before finishing, and
    /// how many tasks it makes runnable (one per slice, each unpinned, one yield), as
    /// a task waking or spawning another does.
    #[derive(Clone, Copy)]
    struct Plan {
        home: Option<usize>,
        yields: usize,
        children: usize,
    }

    /// What is left of a task's plan, and the worker it last ran on.
    struct Progress {
        plan: Plan,
        ran_on: Option<usize>,
    }

    struct Model {
        queue: TransactionalQueue,
        /// A runtime for the workers' contexts only (what `push` asks: whether the
        /// calling thread is inside a slice); its own queue is not used.
        shared: Arc<Shared>,
        /// Each task's progress, by task id (test bookkeeping, not a scheduling point:
        /// held only between shuttle's operations).
        progress: std::sync::Mutex<Vec<Progress>>,
        stop: AtomicBool,
        finished: AtomicUsize,
        total: usize,
    }

    impl Model {
        fn new(total: usize) -> Self {
            let sync = SyncDomain::new(SyncMode::Locks);
            let shared = Arc::new(Shared {
                queue: RunQueue::new(&sync),
                live: LiveTasks::new(&sync),
                sync,
                next_id: Default::default(),
                target: Default::default(),
                shutdown: Default::default(),
                switches: Default::default(),
                counts: Default::default(),
                pin: false,
                stack_size: 0,
                cores: Vec::new(),
                threads: Default::default(),
                seats: crate::queue::slots::Slots::new(),
                pool: crate::carrier::Pool::new(0),
                next_carrier: Default::default(),
            });
            Self {
                queue: TransactionalQueue::new(Arc::new(TxEngine::new())),
                shared,
                progress: std::sync::Mutex::new(Vec::new()),
                stop: AtomicBool::new(false),
                finished: AtomicUsize::new(0),
                total,
            }
        }

        /// A new task following `plan`.
        fn task(&self, plan: Plan) -> Arc<TaskCore> {
            let mut progress = self.progress.lock().unwrap();
            progress.push(Progress { plan, ran_on: None });
            Arc::new(TaskCore::new(progress.len() as u64 - 1, plan.home, None))
        }

        /// One slice of `task` on `worker`: makes a child runnable if its plan has one
        /// left (through `push`, from inside the slice); whether the task finished.
        fn slice(&self, context: &Worker, worker: usize, task: &Arc<TaskCore>) -> bool {
            assert!(
                task.home.is_none_or(|home| home == worker),
                "a pinned task moved"
            );
            let plan = {
                let mut progress = self.progress.lock().unwrap();
                let progress = &mut progress[task.id() as usize];
                if progress.ran_on.is_some_and(|before| before != worker) {
                    HANDED_OVER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                progress.ran_on = Some(worker);
                let plan = progress.plan;
                progress.plan.children = plan.children.saturating_sub(1);
                progress.plan.yields = plan.yields.saturating_sub(1);
                plan
            };
            if plan.children > 0 {
                let child = self.task(Plan {
                    home: None,
                    yields: 1,
                    children: 0,
                });
                context.set_task(Some(task));
                self.queue.push(child, Some(worker));
                context.set_task(None);
            }
            plan.yields == 0
        }

        /// The run loop's shape around the queue, for worker `worker`.
        fn worker(&self, worker: usize) {
            let carrier = crate::carrier::CarrierRecord::new(&self.shared);
            let context = Worker::new(self.shared.clone(), worker, carrier);
            let _entered = context.enter();
            // ORDERING: shuttle's atomics are sequentially consistent whatever the
            // argument; SeqCst says so.
            let stopped = || self.stop.load(Ordering::SeqCst);
            let mut private = Private::new();
            let mut next = None;
            loop {
                let task = match next.take() {
                    Some(task) => task,
                    None => match self.queue.next(worker, &mut private, false, &stopped) {
                        Some(task) => task,
                        None => break,
                    },
                };
                let finished = self.slice(&context, worker, &task);
                self.queue.end_slice(worker, &mut private);
                if !finished {
                    next = Some(self.queue.yield_task(worker, &mut private, task));
                // ORDERING: as `stopped` above (shuttle's atomics).
                } else if self.finished.fetch_add(1, Ordering::SeqCst) + 1 == self.total {
                    // ORDERING: the stop condition before `wake_all`, as a shutdown stores
                    // it (module header, "Stopping").
                    self.stop.store(true, Ordering::SeqCst);
                    self.queue.wake_all();
                }
            }
            assert!(stopped(), "a worker left early");
            self.queue.retire(worker, &mut private);
        }
    }

    /// Two workers, and pushes of `tasks` (each with the worker it is pushed for,
    /// `None` for the global list) from the main thread.
    fn workers_and_pusher(tasks: &'static [(Plan, Option<usize>)]) {
        let total = tasks.iter().map(|(plan, _)| 1 + plan.children).sum();
        let model = Arc::new(Model::new(total));
        let workers: Vec<_> = (0..WORKERS)
            .map(|worker| {
                let model = model.clone();
                thread::spawn(move || model.worker(worker))
            })
            .collect();
        for &(plan, local) in tasks {
            model.queue.push(model.task(plan), local);
        }
        workers
            .into_iter()
            .for_each(|worker| worker.join().unwrap());
        // ORDERING: after joining every worker; as `stopped` above.
        assert_eq!(model.finished.load(Ordering::SeqCst), total);
    }

    const ANY: Option<usize> = None;

    /// Three unpinned yielding tasks queued for worker 0: they reach its private
    /// buffer, and half of them are handed to worker 1 once it sleeps.
    const PUSHED_TO_ONE_WORKER: &[(Plan, Option<usize>)] = &[
        (
            Plan {
                home: ANY,
                yields: 2,
                children: 0,
            },
            Some(0),
        ),
        (
            Plan {
                home: ANY,
                yields: 2,
                children: 0,
            },
            Some(0),
        ),
        (
            Plan {
                home: ANY,
                yields: 1,
                children: 0,
            },
            Some(0),
        ),
    ];

    /// Pinned and unpinned tasks, for each worker and for the global list.
    const MIXED: &[(Plan, Option<usize>)] = &[
        (
            Plan {
                home: Some(1),
                yields: 1,
                children: 0,
            },
            Some(0),
        ),
        (
            Plan {
                home: ANY,
                yields: 1,
                children: 0,
            },
            Some(1),
        ),
        (
            Plan {
                home: Some(0),
                yields: 0,
                children: 0,
            },
            None,
        ),
    ];

    /// Tasks that make others runnable during their slices, on both workers.
    const MAKING_OTHERS_RUNNABLE: &[(Plan, Option<usize>)] = &[
        (
            Plan {
                home: ANY,
                yields: 1,
                children: 2,
            },
            Some(0),
        ),
        (
            Plan {
                home: Some(1),
                yields: 0,
                children: 1,
            },
            None,
        ),
    ];

    /// Guards the private buffer's two exits: `next` takes from it before looking
    /// anywhere else (so a worker with private tasks never sleeps), and the catch-up
    /// hands a sleeper half of it (fast path, step 3). Checked once by deleting each:
    /// with `next` going straight to the idle protocol, shuttle reports a deadlock
    /// (worker 0 sleeps on its private tasks); with `catch_up_slow` never calling
    /// `hand_over`, no schedule hands a task over and the assertion below fails (the
    /// busy worker then runs every task itself: nothing is stranded, only unshared).
    #[test]
    fn private_tasks_are_run_or_handed_over() {
        explore(11, ITERATIONS, || workers_and_pusher(PUSHED_TO_ONE_WORKER));
        assert!(
            HANDED_OVER.load(std::sync::atomic::Ordering::Relaxed) > 0,
            "no schedule reached the hand-over"
        );
    }

    /// Guards the push's wake-up (idle protocol, step 3: `wake_in` in the pushing
    /// transaction) and the look's steal of unpinned tasks. Checked once by deleting
    /// the call to `wake_in` in `push`: shuttle reports a deadlock.
    #[test]
    fn pinned_and_unpinned_tasks_pushed_from_everywhere_are_run() {
        explore(12, ITERATIONS, || workers_and_pusher(MIXED));
    }

    /// Guards the slice's end (fast path, step 0): the tasks a slice made runnable
    /// move to the worker's private buffer. Checked once by deleting that move in
    /// `take_made_runnable`: shuttle reports a deadlock.
    #[test]
    fn tasks_made_runnable_in_a_slice_are_run() {
        explore(14, ITERATIONS, || {
            workers_and_pusher(MAKING_OTHERS_RUNNABLE)
        });
    }
}
