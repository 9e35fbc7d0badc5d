//! A process as a scheduler task: each slice resumes the process's main coroutine
//! until it yields (a blocking call parks, anything else yields the worker) or ends.
//!
//! # Protocol (one slice)
//! 1. First slice only: create the Lua state, load the code, import the arguments.
//! 2. Resume the main coroutine: through mlua the first time (with the function and
//!    its arguments), straight through `lua_resume` after that (`resume.rs`).
//! 3. It yielded `PARK`, or a native call marked its park (`resume.rs`): a blocking
//!    call left a waker: `Step::Park`, or
//!    `Step::Yield` when a cancellation was asked for (nothing else would wake it,
//!    `cancel.rs`). It yielded anything else (preemption, a bare
//!    `coroutine.yield()` at top level): `Step::Yield`. It returned: export the results, finish. It raised: finish as
//!    failed with the message and traceback.
//!
//! Once a cancellation is asked for, each slice resumes the coroutine with `CANCEL`
//! (the process's blocking call raises it, `cancel.rs`); a process cancelled before
//! its first slice ends at once, never loaded.
//!
//! A panic inside a slice (a bug in Lutra) fails the process, never the worker.

use crate::api::PARK;
use crate::liveness::WakeState;
use crate::process::preempt::Slice;
use crate::process::resume::{self, Resumed};
use crate::process::{Outcome, ProcessContext, ProcessCore, new_state, state};
use crate::runtime::RuntimeShared;
use crate::transfer::{self, IsolatedFunction, Message};
use lutra_sched::{Resumable, Step};
use mlua::chunk::ChunkMode;
use mlua::thread::ThreadStatus;
use mlua::{Function, Lua, MultiValue, Thread};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// What a process runs.
pub(crate) enum Code {
    /// An isolated function's bytecode.
    Function(Arc<IsolatedFunction>),
    /// A source chunk (a string given to `spawn`, or the main script).
    Script {
        name: String,
        text: Vec<u8>,
        args: Vec<String>,
    },
    /// A source chunk of the runtime's own, compiled once per OS process (luaproc's
    /// boot chunk): run as a [`Code::Script`] named `name` without arguments would
    /// be, loaded from its bytecode.
    Compiled {
        name: &'static str,
        bytecode: &'static [u8],
    },
}

/// The task body of one process.
pub(crate) struct ProcessTask {
    runtime: Arc<RuntimeShared>,
    core: Arc<ProcessCore>,
    start: Option<(Code, Message)>,
    lua: Option<Lua>,
    /// The address of `lua`'s process context (null until `lua` is set).
    context: ContextAddress,
    thread: Option<Thread>,
    parked: bool,
    /// Its place in the wake-up protocol (`wakers.rs`), from its first slice.
    wake: Option<Arc<WakeState>>,
}

/// The address of a task's own state's process context.
struct ContextAddress(*const ProcessContext);

// SAFETY: the context is the app data of the task's own Lua state, which moves with
// the task and is used only by the worker running it.
unsafe impl Send for ContextAddress {}

impl ProcessTask {
    pub(crate) fn new(
        runtime: Arc<RuntimeShared>,
        core: Arc<ProcessCore>,
        code: Code,
        args: Message,
    ) -> Self {
        Self {
            runtime,
            core,
            start: Some((code, args)),
            lua: None,
            context: ContextAddress(std::ptr::null()),
            thread: None,
            parked: false,
            wake: None,
        }
    }

    /// One slice; `cancelled`: a cancellation was asked for before it started (one
    /// asked during it wakes the task, so a park it ends in returns at once).
    fn slice(&mut self, cancelled: bool) -> Step {
        if cancelled && self.start.is_some() {
            return self.cancel_unstarted();
        }
        let first = match self.start.take() {
            Some((code, message)) => match self.boot(code, &message) {
                Ok(args) => Some(args),
                Err(error) => return self.finish(Outcome::Failed(error_text(&error))),
            },
            None => None,
        };
        let (Some(lua), Some(thread)) = (&self.lua, &self.thread) else {
            return Step::Done;
        };
        let context = self.context.0;
        let resumed = {
            // SAFETY: `thread` and `lua` (whose app data `context` points to) are held
            // by this task for the whole slice, the app data is not replaced in it, and
            // the state runs on this worker only within the slice.
            let _slice = unsafe { Slice::enter(&self.runtime.preemptor, thread.state(), context) };
            match first {
                Some(args) => first_resume(thread, args),
                // SAFETY: after its first slice the coroutine is suspended (a slice
                // that ends it ends the process), and only this task resumes it.
                None if cancelled => unsafe { resume::resume_cancelled(lua, thread) },
                // SAFETY: as above.
                None => unsafe { resume::resume(lua, thread) },
            }
        };
        match resumed {
            Resumed::Yielded { park } => {
                // The preemption mark is consumed (a yield is a yield either way).
                // SAFETY: `context` is the app data of `lua`, alive (see above).
                if let Some(context) = unsafe { context.as_ref() } {
                    context.preempted.store(false, Ordering::Relaxed);
                }
                if park && !cancelled {
                    Step::Park
                } else {
                    Step::Yield
                }
            }
            Resumed::Returned(values) => {
                // The values are handles of the state: `returned` drops them before the
                // state goes back to the pool (`finish_as`).
                let (outcome, recyclable) = self.returned(lua, values);
                self.finish_as(outcome, recyclable)
            }
            Resumed::Failed(error) => self.finish(Outcome::Failed(error_text(&error))),
        }
    }

    /// The outcome of a process whose main coroutine returned `values` (the runner's
    /// `true, results...` or `false, error`), and whether its state may be recycled
    /// (not after a memory error). Takes the values and drops them, with every other
    /// handle of the state it made, before it returns: see [`Self::finish_as`].
    fn returned(&self, lua: &Lua, values: MultiValue) -> (Outcome, bool) {
        let mut values: Vec<mlua::Value> = values.into_iter().collect();
        if !matches!(values.first(), Some(mlua::Value::Boolean(true))) {
            let error = match values.get(1) {
                Some(mlua::Value::String(text)) => text.to_string_lossy(),
                _ => "the process failed with a non-string error".into(),
            };
            let recyclable = !error.starts_with("not enough memory");
            return (Outcome::Failed(error), recyclable);
        }
        values.remove(0);
        let outcome = match transfer::export(lua, &values, |i| format!("result #{i}")) {
            Ok(message) => Outcome::Finished(message),
            Err(error) => Outcome::Failed(format!(
                "process#{} returned a value that cannot be transferred: {error}",
                self.core.id()
            )),
        };
        (outcome, true)
    }

    /// Ends a process cancelled before its first slice: it never runs.
    #[cold]
    fn cancel_unstarted(&mut self) -> Step {
        self.start = None;
        let message = self.core.deliver_cancel();
        self.finish(Outcome::Failed(message.to_string()))
    }

    fn boot(&mut self, code: Code, message: &Message) -> mlua::Result<MultiValue> {
        let lua = new_state(&self.runtime, &self.core)?;
        let function: Function = match code {
            Code::Function(function) => transfer::load_isolated(&lua, &function)?,
            Code::Script { name, text, args } => {
                set_script_args(&lua, &name, &args)?;
                lua.load(&text[..])
                    .set_name(name)
                    .set_mode(ChunkMode::Text)
                    .into_function()?
            }
            Code::Compiled { name, bytecode } => {
                set_script_args(&lua, name, &[])?;
                lua.load(bytecode)
                    .set_name(name)
                    .set_mode(ChunkMode::Binary)
                    .into_function()?
            }
        };
        // A cancellation wakes the process through this waker (`cancel.rs`).
        if let Some(wake) = &self.wake {
            self.core.set_waker(wake.waker());
        }
        let runner: Function = lua.named_registry_value(crate::api::RUN_KEY)?;
        let thread = lua.create_thread(runner)?;
        let mut args = transfer::import(&lua, message)?;
        args.push_front(mlua::Value::Function(function));
        self.thread = Some(thread);
        self.context = ContextAddress(state::context_ptr(&lua));
        self.lua = Some(lua);
        Ok(args)
    }

    /// Ends the process with `outcome`; its state goes back to the pool when
    /// `recyclable` (the process returned or raised a Lua error that was not a memory
    /// error), before joiners are woken.
    ///
    /// No handle of the state (an mlua value, table, function) may be alive but the
    /// task's `lua` and `thread`: once pooled, the state may be taken at once by a new
    /// process on another worker (a joiner woken here spawns one), and a handle dropped
    /// afterwards would touch the state from two threads at once (the handle's drop
    /// frees its slot in the state's reference thread, and without mlua's `send` the
    /// state's reference counts are not atomic): the state's values, or the state
    /// itself, are then corrupted (a closed state, nil in its `raw` table).
    fn finish_as(&mut self, outcome: Outcome, recyclable: bool) -> Step {
        self.thread = None;
        self.context = ContextAddress(std::ptr::null());
        if let Some(lua) = self.lua.take() {
            let limit = self.runtime.recycle_limit.load(Ordering::Relaxed);
            if recyclable && limit > 0 {
                self.runtime.states.recycle(lua, limit);
            }
        }
        self.core.finish(outcome);
        self.runtime.note_finished(&self.core);
        Step::Done
    }

    /// Ends the process after an error outside Lua's control: the state is dropped.
    fn finish(&mut self, outcome: Outcome) -> Step {
        self.finish_as(outcome, false)
    }
}

impl Resumable for ProcessTask {
    fn resume(&mut self) -> Step {
        let was_parked = std::mem::take(&mut self.parked);
        if was_parked {
            // What it waited on (noted by `prepare_park`) is over.
            self.core.set_waiting_on(None);
        }
        self.runtime.note_resumed(was_parked, &mut self.wake);
        let cancelled = self.core.cancel_requested();
        if cancelled {
            self.core.note_cancelled_slice();
        }
        let step = match catch_unwind(AssertUnwindSafe(|| self.slice(cancelled))) {
            Ok(step) => step,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                self.finish(Outcome::Failed(format!("internal error in Lutra: {what}")))
            }
        };
        if step == Step::Park {
            self.parked = true;
            self.runtime.note_parked(self.wake.as_ref());
        } else if step == Step::Done {
            crate::wakers::process_finished(&mut self.wake);
        }
        step
    }
}

/// The first resume of a process's main coroutine (with its function and arguments),
/// through mlua.
fn first_resume(thread: &Thread, args: MultiValue) -> Resumed {
    match thread.resume::<MultiValue>(args) {
        Ok(values) if thread.status() == ThreadStatus::Resumable => {
            // SAFETY: the slice's main coroutine, just returned from its resume.
            let marked = unsafe { resume::native_parked(thread.state()) };
            if marked {
                // SAFETY: as above; mlua's resume emptied the parked call's frame.
                unsafe { resume::frame_emptied(thread.state()) };
            }
            Resumed::Yielded {
                park: marked
                    || matches!(values.front(), Some(mlua::Value::LightUserData(mark)) if mark.0 == PARK),
            }
        }
        Ok(values) => Resumed::Returned(values),
        Err(error) => Resumed::Failed(error),
    }
}

/// The global `arg` table as the stock `lua` program builds it.
fn set_script_args(lua: &Lua, name: &str, args: &[String]) -> mlua::Result<()> {
    let table = lua.create_table()?;
    table.raw_set(0, name.trim_start_matches(['@', '=']))?;
    for (index, arg) in args.iter().enumerate() {
        table.raw_set(index + 1, arg.as_str())?;
    }
    lua.globals().set("arg", table)
}

/// The text of a Lua error: its message (with the traceback the runner added).
pub(crate) fn error_text(error: &mlua::Error) -> String {
    match error {
        mlua::Error::RuntimeError(message) => message.clone(),
        mlua::Error::MemoryError(message) => format!("not enough memory ({message})"),
        mlua::Error::CallbackError { cause, .. } => error_text(cause),
        other => other.to_string(),
    }
}
