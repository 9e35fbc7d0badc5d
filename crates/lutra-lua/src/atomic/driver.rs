//! The attempts of one `lutra.atomic` call, driven from Rust with the engine's
//! low-level descriptor, so that nothing ever blocks the worker thread.
//!
//! # Protocol (`raw.atomic_run(site, attempt, f, ...)` answers `status, value`)
//! 1. A new call (`raw.atomic_run`) forgets what an abandoned one left between its
//!    attempts (`TxContext::forget_waiting`: a call stopped by a cancellation while
//!    it waited or yielded).
//!    The same call going on after its `"retry"` or `"yield"` answer
//!    (`raw.atomic_again(site, attempt, f, ...)`) forgets its `retry` registration:
//!    the process runs again (woken, or spuriously: the transaction simply runs
//!    again).
//! 2. `raw.atomic_again` takes the transaction left pending by its yield; otherwise a
//!    descriptor is leased.
//! 3. Ask the policy's start hook. `Wait` / `SwitchAway`: keep the transaction
//!    pending and answer `"yield"` (the Lua loop yields the process, then calls again).
//!    `Serialize`: the attempt runs irrevocable.
//! 4. Begin (or restart) the attempt, mark it running, forbid preemption, and call
//!    `attempt(f, ...)`, the Lua function that returns what `pcall(f, ...)` returns.
//! 5. The attempt is doomed by `retry`: roll back, register the process's waker for
//!    what the attempt read (`TxDescriptor::watch_for_change`), answer `"retry"` (the
//!    Lua loop parks the process). Doomed otherwise: roll back, back off, ask the
//!    abort hook; `Wait` / `SwitchAway`, or many aborts in a row, keep the transaction
//!    pending and answer `"yield"`, except after an `Irrevocable` abort (the
//!    descriptor may hold the commit gate for its irrevocable restart: it restarts at
//!    once); otherwise go to 3.
//! 6. `f` returned: commit. Committed: answer `"ok"` and a key, the results kept
//!    under it for `raw.atomic_results(key)`, which `lutra.atomic` tail-calls to
//!    return them. The commit failed: as a doomed attempt in 5.
//! 7. Cancelled (`process/cancel.rs`): a cancellation asked for and not raised yet,
//!    before the first attempt or seen after a revocable attempt (which the
//!    preemption hook may have doomed for it), rolls back and answers `"error"` with
//!    its message; an irrevocable attempt goes on to its commit. Once raised, the
//!    process's cleanup runs transactions as usual.
//! 8. `f` raised an error (not a doom): roll back (no write of the attempt is seen by
//!    anyone) and answer `"error"` with the error value. Misuses (`retry` in an
//!    irrevocable transaction or in one that read nothing) also answer `"error"`, with
//!    a message. So does an error raised in `attempt` outside its `pcall` (a user's
//!    debug hook firing just before or after `f`), with the error's message: the
//!    call never fails, so `lutra.atomic` always leaves the attempt (`inside`)
//!    before it raises.

use crate::atomic::{Pending, TxContext};
use crate::process::ProcessContext;
use lutra_stm::{AbortReason, Decision, TxDescriptor, TxOptions};
use mlua::{Function, Lua, MultiValue};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Aborts in a row after which a restart first lets the worker run other processes.
const YIELD_AFTER_ABORTS: u32 = 4;

/// The longest contention-manager delay waited out on the worker; longer ones yield.
const SPIN_LIMIT: Duration = Duration::from_micros(50);

/// What one call of the driver ends with.
enum Answer {
    /// `true` and the function's results, as `attempt` returned them.
    Ok(MultiValue),
    Error(mlua::Value),
    Retry,
    Yield,
}

/// What to do after an aborted attempt.
enum AfterAbort {
    Restart,
    Yield,
}

/// `raw.atomic_run(site, attempt, f, ...)`: a new `lutra.atomic` call (steps 1 and 2),
/// or `"nested"` when an attempt is running (the call joins it).
pub(crate) fn run(
    lua: &Lua,
    (site, attempt, args): (u32, Function, MultiValue),
) -> mlua::Result<(&'static str, mlua::Value)> {
    let context = TxContext::of(lua)?;
    if context.running.get() {
        // Called as the running attempt ends, after `attempt` left it (a debug hook or
        // a finalizer running Lua code there): `lutra.atomic` joins the attempt.
        return Ok(("nested", mlua::Value::Nil));
    }
    context.forget_waiting();
    let lease = lease(&context, site);
    drop(context);
    match lease {
        Ok(Pending { desc, first }) => drive(lua, site, &attempt, desc, first, args),
        Err(full) => answer_of(lua, failure(lua, full)?),
    }
}

/// `raw.atomic_again(site, attempt, f, ...)`: the call that answered `"retry"` or
/// `"yield"` goes on (steps 1 and 2).
pub(crate) fn again(
    lua: &Lua,
    (site, attempt, args): (u32, Function, MultiValue),
) -> mlua::Result<(&'static str, mlua::Value)> {
    let context = TxContext::of(lua)?;
    if context.running.get() {
        return Err(mlua::Error::runtime(
            "raw.atomic_again inside a running attempt",
        ));
    }
    context.watch.borrow_mut().take();
    let pending = context.pending.borrow_mut().take();
    let lease = pending.map_or_else(|| lease(&context, site), Ok);
    drop(context);
    match lease {
        Ok(Pending { desc, first }) => drive(lua, site, &attempt, desc, first, args),
        Err(full) => answer_of(lua, failure(lua, full)?),
    }
}

/// `raw.atomic_results(key)`: the results of the call whose `"ok"` answer gave `key`
/// (step 6), taken once.
pub(crate) fn results(lua: &Lua, key: u64) -> mlua::Result<MultiValue> {
    TxContext::of(lua)?
        .take_results(key)
        .ok_or_else(|| mlua::Error::runtime("raw.atomic_results: no results kept under this key"))
}

/// A descriptor from the engine's pool for a new transaction at `site` (step 2).
fn lease(context: &TxContext, site: u32) -> Result<Pending, lutra_stm::RegistryFull> {
    let mut desc = context.engine.lease()?;
    desc.prepare(TxOptions::site(site));
    Ok(Pending { desc, first: true })
}

/// Steps 3 to 8 for the call's descriptor `desc` (`first`: no attempt has begun).
fn drive(
    lua: &Lua,
    site: u32,
    attempt: &Function,
    mut desc: Box<TxDescriptor>,
    mut first: bool,
    args: MultiValue,
) -> mlua::Result<(&'static str, mlua::Value)> {
    lutra_sched::set_tx_id(u64::from(site));
    loop {
        if first && let Some(message) = cancelled(lua)? {
            return finish(lua, desc, failure(lua, message)?);
        }
        let options = match desc.start_decision() {
            Decision::Wait | Decision::SwitchAway => return park(lua, desc, first),
            Decision::Serialize => TxOptions {
                irrevocable: true,
                ..desc.options()
            },
            Decision::Proceed => desc.options(),
        };
        if first {
            desc.begin(TxOptions { site, ..options });
        } else {
            desc.restart();
            if options.irrevocable {
                // A fresh attempt that read nothing becomes irrevocable, or is doomed
                // and restarts irrevocable.
                let _ = desc.become_irrevocable();
            }
        }
        first = false;
        let (returned, back) = attempt_once(lua, desc, attempt, &args)?;
        desc = back;
        // Also when the attempt's body raised outside its own `pcall`: the preemption
        // hook may stop it there (before or after `f`), with the cancellation's error.
        if !desc.is_irrevocable()
            && let Some(message) = cancelled(lua)?
        {
            desc.rollback(AbortReason::Explicit);
            return finish(lua, desc, failure(lua, message)?);
        }
        let reason = match (desc.doomed(), returned) {
            (Some(reason), _) => reason,
            (None, Ok(values)) if matches!(values.front(), Some(mlua::Value::Boolean(true))) => {
                match desc.commit() {
                    Ok(()) => {
                        let moved = crate::transfer::moved::attempt_committed(lua);
                        let answer = finish(lua, desc, Answer::Ok(values));
                        return moved.and(answer);
                    }
                    Err(abort) => abort.reason(),
                }
            }
            (None, Ok(mut values)) => {
                desc.rollback(AbortReason::Explicit);
                let error = values.drain(..).nth(1).unwrap_or(mlua::Value::Nil);
                return finish(lua, desc, Answer::Error(error));
            }
            // Raised outside the body's `pcall` (a debug hook firing in `attempt`):
            // an error of the transaction all the same, answered so that
            // `lutra.atomic` leaves the attempt before raising it.
            (None, Err(error)) => {
                desc.rollback(AbortReason::Explicit);
                return finish(lua, desc, failure(lua, escaped_message(&error))?);
            }
        };
        match reason {
            AbortReason::Retry => return wait_for_change(lua, desc),
            AbortReason::Misuse => {
                desc.rollback(reason);
                let message = "lutra.retry() cannot wait in a transaction that became \
                               irrevocable (it printed or communicated before retrying)";
                return finish(lua, desc, failure(lua, message)?);
            }
            _ => {
                desc.rollback(reason);
                if let AfterAbort::Yield = back_off(&desc, reason) {
                    return park(lua, desc, false);
                }
            }
        }
    }
}

/// The message of the cancellation asked of this process and not raised yet, if any
/// (step 7).
fn cancelled(lua: &Lua) -> mlua::Result<Option<std::sync::Arc<str>>> {
    Ok(lua
        .app_data_ref::<ProcessContext>()
        .and_then(|context| crate::process::cancel::interrupting_message(&context)))
}

/// Runs one attempt: `attempt(args...)` with the descriptor lent to the Lua state.
/// Returns Lua's answer and the descriptor.
#[allow(clippy::type_complexity)]
fn attempt_once(
    lua: &Lua,
    desc: Box<TxDescriptor>,
    attempt: &Function,
    args: &MultiValue,
) -> mlua::Result<(mlua::Result<MultiValue>, Box<TxDescriptor>)> {
    {
        let context = TxContext::of(lua)?;
        *context.desc.borrow_mut() = Some(desc);
        context.running.set(true);
    }
    crate::transfer::moved::forget_attempt_moves(lua);
    let process = ProcessContext::of(lua)?;
    process.no_preempt.store(true, Ordering::Relaxed);
    drop(process);
    let returned = attempt.call::<MultiValue>(args);
    ProcessContext::of(lua)?
        .no_preempt
        .store(false, Ordering::Relaxed);
    let context = TxContext::of(lua)?;
    context.running.set(false);
    context.checkpoints.borrow_mut().clear();
    let desc = context
        .desc
        .borrow_mut()
        .take()
        .ok_or_else(|| mlua::Error::runtime("the attempt's descriptor went missing"))?;
    Ok((returned, desc))
}

/// Step 5 for `retry`: registers the process's waker and answers `"retry"`.
fn wait_for_change(
    lua: &Lua,
    mut desc: Box<TxDescriptor>,
) -> mlua::Result<(&'static str, mlua::Value)> {
    match desc.watch_for_change(crate::wakers::current_waker()) {
        Ok(watch) => {
            *TxContext::of(lua)?.watch.borrow_mut() = Some(watch);
            finish(lua, desc, Answer::Retry)
        }
        Err(_) => {
            let message = "lutra.retry() in a transaction that read no shared table: \
                           nothing could ever wake it";
            finish(lua, desc, failure(lua, message)?)
        }
    }
}

/// Backs off after an abort and tells whether to yield the process first.
fn back_off(desc: &TxDescriptor, reason: AbortReason) -> AfterAbort {
    let decision = desc.abort_decision(reason);
    let aborts = desc.aborts_in_row();
    let delay = desc.stm().config().manager.restart_delay(aborts);
    if reason == AbortReason::Irrevocable {
        // The descriptor may hold the commit gate for its irrevocable restart.
        return AfterAbort::Restart;
    }
    let yields = matches!(decision, Decision::Wait | Decision::SwitchAway)
        || aborts >= YIELD_AFTER_ABORTS
        || delay > SPIN_LIMIT;
    if yields {
        return AfterAbort::Yield;
    }
    let until = Instant::now() + delay;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
    AfterAbort::Restart
}

/// Keeps the transaction pending across a yield of the process.
fn park(
    lua: &Lua,
    desc: Box<TxDescriptor>,
    first: bool,
) -> mlua::Result<(&'static str, mlua::Value)> {
    *TxContext::of(lua)?.pending.borrow_mut() = Some(Pending { desc, first });
    answer_of(lua, Answer::Yield)
}

fn release(lua: &Lua, desc: Box<TxDescriptor>) -> mlua::Result<()> {
    TxContext::of(lua)?.engine.release(desc);
    Ok(())
}

fn finish(
    lua: &Lua,
    desc: Box<TxDescriptor>,
    answer: Answer,
) -> mlua::Result<(&'static str, mlua::Value)> {
    crate::transfer::moved::forget_attempt_moves(lua);
    release(lua, desc)?;
    answer_of(lua, answer)
}

/// The message of an error that escaped `attempt`: what the error said, without the
/// traceback that the call from Rust appended (`lutra.atomic` raises it again, and
/// whoever reports it adds its own).
fn escaped_message(error: &mlua::Error) -> String {
    let message = match error {
        mlua::Error::RuntimeError(message) => message.clone(),
        other => other.to_string(),
    };
    match message.find("\nstack traceback:") {
        Some(end) => message[..end].to_owned(),
        None => message,
    }
}

/// An error answer carrying `message` as a Lua string.
fn failure(lua: &Lua, message: impl std::fmt::Display) -> mlua::Result<Answer> {
    Ok(Answer::Error(mlua::Value::String(
        lua.create_string(message.to_string())?,
    )))
}

/// What `raw.atomic_run` and `raw.atomic_again` return: the status, and for
/// `"error"` the error value; for `"ok"` the key under which the results wait for
/// `raw.atomic_results`.
fn answer_of(lua: &Lua, answer: Answer) -> mlua::Result<(&'static str, mlua::Value)> {
    Ok(match answer {
        Answer::Ok(mut values) => {
            values.pop_front();
            let key = TxContext::of(lua)?.keep_results(values);
            ("ok", mlua::Value::Integer(key as i64))
        }
        Answer::Error(error) => ("error", error),
        Answer::Retry => ("retry", mlua::Value::Nil),
        Answer::Yield => ("yield", mlua::Value::Nil),
    })
}
