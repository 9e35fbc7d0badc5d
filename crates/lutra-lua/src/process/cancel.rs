//! Cancellation of a process (`p:cancel([reason])`): a request recorded in the
//! process's record, raised as an error in the process at its next safe point.
//!
//! # States (`State::cancel`, under the record's lock)
//! | state            | meaning                                              | left by                         |
//! |------------------|------------------------------------------------------|---------------------------------|
//! | `None`           | nobody asked                                         | [`ProcessCore::cancel`]          |
//! | `Requested(m)`   | asked; `m` ("cancelled: reason") not yet raised      | [`ProcessCore::deliver_cancel`] |
//! | `Delivered(m)`   | raised in the process at least once: it ends cancelled, whatever way it ends | never   |
//!
//! A request is refused (answers false) once the process has ended, or when it was
//! asked already (the first reason stands). The per-slice check reads only the
//! record's `cancel_requested` flag (relaxed: the lock orders the rest).
//!
//! # Protocol (safe points)
//! 1. `cancel` records the request, sets the flag (Release, under the lock) and wakes
//!    the process's task with the waker its first slice left (`set_waker`); a
//!    process not started yet needs none: its first slice sees the flag. A request
//!    that lands in the first slice between the flag's read and `set_waker` is seen
//!    by `set_waker`, which wakes the task itself.
//! 2. A slice that starts with the flag set counts itself (`cancelled_slices`) and
//!    resumes the process with the light userdata [`CANCEL`]: a blocking call parked
//!    in the prelude or natively takes it as its answer and raises; a yield of
//!    `lutra.yield`, or a user's `coroutine.yield` (step 6), does the same. A process that was stopped by preemption (a
//!    yield inside the preemption hook, which discards resume values) meets the
//!    hook again two instructions later, and the hook raises (`preempt.rs`).
//! 3. A slice that would park while the flag is set yields instead: it is resumed
//!    at once with `CANCEL` (nothing else would wake it).
//! 4. A CPU-bound process is stopped by the preemption hook, which raises instead
//!    of yielding, once: after the first raise (`Delivered`) the code that runs is
//!    the process's cleanup (a `__close` handler, a `pcall`'s handler), which the
//!    hook only preempts, so cleanup is never cut short. Inside `lutra.atomic` the
//!    hook first dooms a revocable attempt (the driver then rolls it back and raises
//!    outside, `atomic/driver.rs`); an irrevocable attempt runs to its end. Likewise
//!    `lutra.atomic` refuses to begin, or to commit, only before the first raise:
//!    cleanup may record its end in shared tables.
//! 5. Each raise takes the message with `deliver_cancel` (moving to `Delivered`).
//!    The process ends as cancelled (`finish`) even if it caught the error.
//! 6. A user's own `coroutine.yield` at the top of a process yields its main
//!    coroutine to the scheduler as `lutra.yield` does, so it is a safe point too: a
//!    process's `coroutine.yield` is [`checked_yield`], which raises when resumed with
//!    `CANCEL` (only the task resumes with it: a user cannot make the value).

use crate::process::{ProcessContext, ProcessCore};
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Waker;

/// The value a cancelled process is resumed with (see the protocol, step 2).
pub(crate) const CANCEL: *mut std::ffi::c_void = std::ptr::dangling_mut::<u16>().cast();

/// Where a process stands with cancellation (see the module's table).
#[derive(Debug, Clone)]
pub(crate) enum Cancel {
    None,
    Requested(Arc<str>),
    Delivered(Arc<str>),
}

/// The message of a cancellation for `reason`.
fn message_of(reason: Option<&str>) -> Arc<str> {
    match reason {
        Some(reason) => format!("cancelled: {reason}").into(),
        None => "cancelled".into(),
    }
}

impl ProcessCore {
    /// Asks the process to stop at its next safe point (module protocol); `reason`
    /// ends up in its error, `cancelled: reason`. Returns whether this call made the
    /// request: false when the process has ended or was asked already.
    pub fn cancel(&self, reason: Option<&str>) -> bool {
        let waker = {
            let mut state = self.lock();
            if !matches!(state.outcome, crate::Outcome::Running)
                || !matches!(state.cancel, Cancel::None)
            {
                return false;
            }
            state.cancel = Cancel::Requested(message_of(reason));
            // ORDERING: Release under the lock; the process's check is relaxed and
            // takes the lock before it acts (`deliver_cancel`).
            self.cancel_requested.store(true, Ordering::Release);
            state.waker.clone()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        true
    }

    /// Whether a cancellation was asked for (the per-slice check).
    #[inline]
    pub(crate) fn cancel_requested(&self) -> bool {
        self.cancel_requested.load(Ordering::Relaxed)
    }

    /// The cancellation's message, which the caller raises in the process: from here
    /// on the process ends as cancelled.
    #[cold]
    pub(crate) fn deliver_cancel(&self) -> Arc<str> {
        let mut state = self.lock();
        let message = match &state.cancel {
            Cancel::Requested(message) | Cancel::Delivered(message) => message.clone(),
            Cancel::None => message_of(None),
        };
        state.cancel = Cancel::Delivered(message.clone());
        self.cancel_delivered.store(true, Ordering::Relaxed);
        message
    }

    /// The cancellation's message, without delivering it.
    #[cold]
    fn cancel_message(&self) -> Arc<str> {
        match &self.lock().cancel {
            Cancel::Requested(message) | Cancel::Delivered(message) => message.clone(),
            Cancel::None => message_of(None),
        }
    }

    /// Whether the preemption hook should interrupt the process's running code with
    /// its cancellation (protocol, step 4): asked for and not raised yet. Once raised,
    /// the code that runs is the process's cleanup (`__close`, a `pcall` handler),
    /// which a preemption only pauses.
    #[inline]
    pub(crate) fn cancel_interrupts(&self) -> bool {
        self.cancel_requested.load(Ordering::Relaxed)
            && !self.cancel_delivered.load(Ordering::Relaxed)
    }

    /// Leaves the process's task waker for a later cancellation (first slice). A
    /// cancellation asked for since the slice read the flag found no waker: the task
    /// wakes itself, so that its next park returns at once.
    #[cold]
    pub(crate) fn set_waker(&self, waker: Waker) {
        let asked = {
            let mut state = self.lock();
            if matches!(state.outcome, crate::Outcome::Running) {
                state.waker = Some(waker.clone());
            }
            !matches!(state.cancel, Cancel::None)
        };
        if asked {
            waker.wake();
        }
    }

    /// A slice starts after the cancellation was asked for.
    #[cold]
    pub(crate) fn note_cancelled_slice(&self) {
        self.lock().cancelled_slices += 1;
    }

    /// How many slices the process started after a cancellation was asked for (0
    /// without one): how soon it stopped, counted rather than timed.
    pub fn slices_after_cancel(&self) -> u32 {
        self.lock().cancelled_slices
    }

    /// Where the process stands: `"running"`, `"waiting"` (blocked, with what it
    /// waits on), `"cancelling"` (asked to cancel, not ended yet), `"returned"`, `"failed"` (with its error) or `"cancelled"` (with
    /// the cancellation's message).
    pub fn status(&self) -> (&'static str, Option<String>) {
        let (outcome, cancelled, asked) = {
            let state = self.lock();
            let asked = !matches!(state.cancel, Cancel::None);
            (state.outcome.clone(), state.cancelled, asked)
        };
        match outcome {
            crate::Outcome::Running if asked => ("cancelling", None),
            crate::Outcome::Running => match self.waiting_on() {
                Some(what) => ("waiting", Some(what)),
                None => ("running", None),
            },
            crate::Outcome::Finished(_) => ("returned", None),
            crate::Outcome::Failed(error) if cancelled => ("cancelled", Some(error)),
            crate::Outcome::Failed(error) => ("failed", Some(error)),
        }
    }

    /// Whether the process ended cancelled.
    pub fn was_cancelled(&self) -> bool {
        self.lock().cancelled
    }
}

/// Whether the preemption hook stops the cancelled process `context` now, on its
/// running thread `state` (protocol, step 4): always outside `lutra.atomic`; inside,
/// when the running attempt is revocable, which this dooms (the driver rolls it back
/// and raises the cancellation outside, `atomic/driver.rs`).
///
/// # Safety
/// Called from the preemption hook, on `state`, the running thread of `context`'s
/// process.
#[cold]
pub(super) unsafe fn stops_here(context: &ProcessContext, state: *mut lua_State) -> bool {
    if !context.no_preempt.load(Ordering::Relaxed) {
        return true;
    }
    // SAFETY: `state` is a thread of a state mlua made (its extra data is set), alive
    // for the hook's call.
    let lua = unsafe { mlua::Lua::get_or_init_from_ptr(state) };
    let Ok(tx) = crate::atomic::TxContext::of(lua) else {
        return false;
    };
    // The descriptor is lent out while a shared-table operation runs (Lua code may
    // then run only in a finalizer, which hooks do not reach): no doom then.
    let Ok(mut slot) = tx.desc.try_borrow_mut() else {
        return false;
    };
    match slot.as_mut() {
        Some(desc) if tx.running.get() && !desc.is_irrevocable() => {
            if desc.doomed().is_none() {
                let _ = desc.doom(lutra_stm::AbortReason::Explicit);
            }
            true
        }
        _ => false,
    }
}

/// Raises the cancellation of `context`'s process on `state`, at the position of the
/// running function.
///
/// # Safety
/// As [`stops_here`]; this longjmps (nothing Rust owns is alive in the caller).
#[cold]
pub(super) unsafe fn raise(context: &ProcessContext, state: *mut lua_State) -> ! {
    let message = if context.no_preempt.load(Ordering::Relaxed) {
        // Inside `lutra.atomic` (`stops_here` doomed the attempt): the error only stops
        // the attempt's code; the driver rolls it back and delivers the cancellation
        // outside (step 4), so it stays undelivered until then.
        context.process.cancel_message()
    } else {
        context.process.deliver_cancel()
    };
    // SAFETY: the caller's contract (the running thread, nothing Rust owns alive in
    // its frames but the message, which `raise` drops before the jump).
    unsafe { crate::api::native::raise(state, message) }
}

/// The cancellation's message for a native call to raise, if `context`'s process was
/// asked to cancel (every wait raises it, step 2).
#[cold]
pub(crate) fn pending_message(context: &ProcessContext) -> Option<Arc<str>> {
    context
        .process
        .cancel_requested()
        .then(|| context.process.deliver_cancel())
}

/// The cancellation's message for `lutra.atomic` to raise, if `context`'s process was
/// asked to cancel and it was not raised yet (step 4): a transaction in cleanup code
/// commits.
#[cold]
pub(crate) fn interrupting_message(context: &ProcessContext) -> Option<Arc<str>> {
    context
        .process
        .cancel_interrupts()
        .then(|| context.process.deliver_cancel())
}

/// `coroutine.yield` in a process (protocol, step 6): the stock function's contract
/// (yields its arguments; returns what the coroutine is resumed with), and resumed
/// with `CANCEL` it raises the process's cancellation at the caller's line.
///
/// # Safety
/// Called by Lua as a C function.
pub(crate) unsafe extern "C-unwind" fn checked_yield(state: *mut lua_State) -> c_int {
    // SAFETY: the arguments stay on the stack as the yielded values; lua_yieldk
    // longjmps (a non-yieldable caller gets Lua's error) over a frame owning nothing.
    unsafe { ffi::lua_yieldk(state, ffi::lua_gettop(state), 0, Some(yield_resumed)) }
}

/// The continuation of [`checked_yield`]: its stack holds the resume values alone.
///
/// # Safety
/// Called by Lua as the continuation of `checked_yield`, on the resumed thread.
unsafe extern "C-unwind" fn yield_resumed(
    state: *mut lua_State,
    _status: c_int,
    _ctx: ffi::lua_KContext,
) -> c_int {
    // SAFETY: reads of the running thread's own stack.
    unsafe {
        let count = ffi::lua_gettop(state);
        if count >= 1 && ffi::lua_touserdata(state, 1) == CANCEL {
            raise_resumed(state)
        }
        count
    }
}

/// Raises the cancellation of the process whose task resumed `state` with `CANCEL`,
/// at the line of the nearest user Lua code ([`user_position`]).
///
/// # Safety
/// As [`yield_resumed`] (this longjmps; nothing Rust owns is alive in the caller).
#[cold]
unsafe fn raise_resumed(state: *mut lua_State) -> ! {
    // SAFETY: `CANCEL` comes from the task alone, so this runs in the process's slice.
    let message = match unsafe { super::state::current() } {
        Some(context) => context.process.deliver_cancel(),
        None => message_of(None),
    };
    // SAFETY: reads of the running thread's frames.
    let text = match unsafe { user_position(state) } {
        Some(position) => format!("{position}: {message}"),
        None => message.to_string(),
    };
    drop(message);
    // SAFETY: the caller's contract; Lua copies the text before it is dropped, and the
    // stack has room for it (LUA_MINSTACK).
    unsafe {
        ffi::lua_pushlstring(state, text.as_ptr().cast(), text.len());
        drop(text);
        ffi::lua_error(state)
    }
}

/// The runtime's own chunks, as `short_src` names them.
const INTERNAL: [&[u8]; 4] = [b"lutra", b"lutra.shared", b"lutra.transfer", b"luaproc"];

/// `file:line` of the nearest frame of user Lua code that called the running C
/// function of `state` (C functions and the runtime's own wrappers, such as the
/// shared tables' `coroutine.yield`, are skipped), if any.
///
/// # Safety
/// `state` is the running thread.
#[cold]
unsafe fn user_position(state: *mut lua_State) -> Option<String> {
    for level in 1.. {
        // SAFETY: a zeroed `lua_Debug` is valid (null pointers, zero counts); Lua fills
        // it for a frame that exists, and `short_src` is then a C string.
        unsafe {
            let mut info: ffi::lua_Debug = std::mem::zeroed();
            if ffi::lua_getstack(state, level, &mut info) == 0 {
                return None;
            }
            ffi::lua_getinfo(state, c"Sl".as_ptr(), &mut info);
            let source = std::ffi::CStr::from_ptr(info.short_src.as_ptr()).to_bytes();
            if info.currentline > 0 && !INTERNAL.contains(&source) {
                return Some(format!(
                    "{}:{}",
                    String::from_utf8_lossy(source),
                    info.currentline
                ));
            }
        }
    }
    None
}
