//! Native tasks: Rust closures run on their own stack (a corosensei coroutine with a
//! guard page), and the handle that joins them.
//!
//! # Invariants
//! - The body publishes its yielder in the task record before running user code; the
//!   yielder stays valid until the body returns.
//! - A panic in user code is caught inside the coroutine and handed to the joiner;
//!   nothing unwinds into the worker.

use crate::context::TaskYielder;
use crate::overflow;
use crate::suspend::{current_waker, park};
use crate::task::{Resumable, Step, TaskCore};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult};
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::Waker;

/// A native task's coroutine.
pub(crate) struct NativeTask {
    coroutine: Coroutine<(), Step, (), DefaultStack>,
    /// Fails the task after a stack overflow (see `overflow.rs`).
    fail_on_overflow: Box<dyn Fn() + Send + Sync>,
}

// SAFETY: the overflow closure is `Send + Sync`. A coroutine is not `Send` because code inside it may cache thread-local
// addresses across a suspension. Lutra's own code re-reads thread-locals after every
// suspension (`context.rs`); user code running in a migratable task is documented to
// hold no thread-local address across `yield_now`, `park`, `switch`, barriers or
// `join` (pinned tasks never move). The closure and result are `Send`.
unsafe impl Send for NativeTask {}

impl Resumable for NativeTask {
    fn resume(&mut self) -> Step {
        overflow::arm(Some(overflow::Armed {
            trap: self.coroutine.trap_handler(),
            fail: &*self.fail_on_overflow,
        }));
        let result = self.coroutine.resume(());
        overflow::arm(None);
        match result {
            CoroutineResult::Yield(step) => step,
            CoroutineResult::Return(()) => Step::Done,
        }
    }
}

impl NativeTask {
    /// A task running `body` on a fresh stack of `stack_size` bytes, reporting to
    /// `join`.
    pub(crate) fn new<T: Send + 'static>(
        core: Arc<TaskCore>,
        stack_size: usize,
        body: impl FnOnce() -> T + Send + 'static,
        join: Arc<JoinState<T>>,
    ) -> std::io::Result<Self> {
        let stack = DefaultStack::new(stack_size)?;
        let task_id = core.id();
        let failed = join.clone();
        let fail_on_overflow = Box::new(move || {
            let message = format!("task {task_id} overflowed its stack of {stack_size} bytes");
            eprintln!("lutra: {message}");
            failed.complete(Err(Box::new(message)));
        });
        let coroutine = Coroutine::with_stack(stack, move |yielder: &TaskYielder, ()| {
            core.yielder
                // ORDERING: Release, paired with the Acquire load in `context::suspend`:
                // the yielder is published before the body runs. The task is read back on
                // the thread that runs it, or on another worker after a hand-over through
                // the run queue, which already orders it: belt and braces.
                .store(yielder as *const TaskYielder as *mut (), Ordering::Release);
            let result = catch_unwind(AssertUnwindSafe(body));
            // ORDERING: as the store above: pairs with the Acquire load in
            // `context::suspend`.
            core.yielder.store(std::ptr::null_mut(), Ordering::Release);
            drop(core);
            join.complete(result);
        });
        Ok(Self {
            coroutine,
            fail_on_overflow,
        })
    }
}

/// The panic payload of a task that panicked.
pub type TaskPanic = Box<dyn Any + Send + 'static>;

struct Outcome<T> {
    result: Option<Result<T, TaskPanic>>,
    finished: bool,
    joiners: Vec<Waker>,
}

pub(crate) struct JoinState<T> {
    outcome: Mutex<Outcome<T>>,
}

impl<T> JoinState<T> {
    pub(crate) fn new() -> Self {
        Self {
            outcome: Mutex::new(Outcome {
                result: None,
                finished: false,
                joiners: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Outcome<T>> {
        self.outcome
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn complete(&self, result: Result<T, TaskPanic>) {
        let mut outcome = self.lock();
        outcome.result = Some(result);
        outcome.finished = true;
        let joiners = std::mem::take(&mut outcome.joiners);
        drop(outcome);
        joiners.into_iter().for_each(Waker::wake);
    }
}

/// Waits for a task and takes its result.
pub struct JoinHandle<T> {
    state: Arc<JoinState<T>>,
    task: Arc<TaskCore>,
}

impl<T> JoinHandle<T> {
    pub(crate) fn new(state: Arc<JoinState<T>>, task: Arc<TaskCore>) -> Self {
        Self { state, task }
    }

    /// The task's record (id, name, announced transaction id).
    pub fn task(&self) -> &Arc<TaskCore> {
        &self.task
    }

    /// Whether the task has finished.
    pub fn is_finished(&self) -> bool {
        self.state.lock().finished
    }

    /// Whether the task has finished with a failure (a panic, or a stack overflow:
    /// see `overflow.rs`) whose result nobody has taken with [`JoinHandle::join`].
    /// Any time; `false` while it runs.
    pub fn failed(&self) -> bool {
        matches!(self.state.lock().result, Some(Err(_)))
    }

    /// Waits for the task to finish (parking the current task, or the thread outside
    /// tasks) and returns its result.
    ///
    /// # Errors
    /// The panic payload if the task panicked (`Err`), as `std::thread::JoinHandle`.
    pub fn join(self) -> Result<T, TaskPanic> {
        loop {
            {
                let mut outcome = self.state.lock();
                if let Some(result) = outcome.result.take() {
                    return result;
                }
                outcome.joiners.push(current_waker());
            }
            park();
        }
    }
}
