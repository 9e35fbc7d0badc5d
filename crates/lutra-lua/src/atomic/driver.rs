//! The attempts of one `lutra.atomic` call, driven from Rust with the engine's
//! low-level descriptor, so that nothing ever blocks the worker thread.
//!
//! # Protocol (`raw.atomic_run(site, attempt, f, ...)` answers `status, value`)
//! 1. Forget the `retry` registration of the previous call, if any: the process runs
//!    again (woken, or spuriously: the transaction simply runs again).
//! 2. Take the transaction left pending by a yield, or lease a descriptor.
//! 3. Ask the policy's start hook. `Wait` / `SwitchAway`: keep the transaction
//!    pending and answer `"yield"` (the Lua loop yields the process, then calls again).
//!    `Serialize`: the attempt runs irrevocable.
//! 4. Begin (or restart) the attempt, mark it running, forbid preemption, and call
//!    `attempt(f, ...)`, the Lua function that returns `table.pack(pcall(f, ...))`.
//! 5. The attempt is doomed by `retry`: roll back, register the process's waker for
//!    what the attempt read (`TxDescriptor::watch_for_change`), answer `"retry"` (the
//!    Lua loop parks the process). Doomed otherwise: roll back, back off, ask the
//!    abort hook; `Wait` / `SwitchAway`, or many aborts in a row, keep the transaction
//!    pending and answer `"yield"`, except after an `Irrevocable` abort (the
//!    descriptor may hold the commit gate for its irrevocable restart: it restarts at
//!    once); otherwise go to 3.
//! 6. `f` returned: commit. Committed: answer `"ok"` and the packed results. The
//!    commit failed: as a doomed attempt in 5.
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
use mlua::{Function, Lua, MultiValue, Table};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Aborts in a row after which a restart first lets the worker run other processes.
const YIELD_AFTER_ABORTS: u32 = 4;

/// The longest contention-manager delay waited out on the worker; longer ones yield.
const SPIN_LIMIT: Duration = Duration::from_micros(50);

/// What one call of the driver ends with.
enum Answer {
    Ok(Table),
    Error(mlua::Value),
    Retry,
    Yield,
}

/// What to do after an aborted attempt.
enum AfterAbort {
    Restart,
    Yield,
}

/// `raw.atomic_run(site, attempt, f, ...)`.
pub(crate) fn run(
    lua: &Lua,
    (site, attempt, args): (u32, Function, MultiValue),
) -> mlua::Result<(&'static str, mlua::Value)> {
    let context = TxContext::of(lua)?;
    if context.running.get() {
        return Err(mlua::Error::runtime(
            "raw.atomic_run inside a running attempt",
        ));
    }
    context.watch.borrow_mut().take();
    let pending = context.pending.borrow_mut().take();
    let Pending {
        mut desc,
        mut first,
    } = match pending {
        Some(pending) => pending,
        None => {
            let mut desc = match context.engine.lease() {
                Ok(desc) => desc,
                Err(full) => return answer_of(failure(lua, full)?),
            };
            desc.prepare(TxOptions::site(site));
            Pending { desc, first: true }
        }
    };
    drop(context);
    lutra_sched::set_tx_id(u64::from(site));
    loop {
        if first && let Some(message) = cancelled(lua)? {
            return finish(lua, desc, failure(lua, message)?);
        }
        let options = match desc.start_decision() {
            Decision::Wait | Decision::SwitchAway => return park(lua, desc, first, Answer::Yield),
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
        let (returned, back) = attempt_once(lua, desc, &attempt, &args)?;
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
            (None, Ok(packed)) if packed.raw_get::<bool>(1)? => match desc.commit() {
                Ok(()) => {
                    let moved = crate::transfer::moved::attempt_committed(lua);
                    let answer = finish(lua, desc, Answer::Ok(packed));
                    return moved.and(answer);
                }
                Err(abort) => abort.reason(),
            },
            (None, Ok(packed)) => {
                desc.rollback(AbortReason::Explicit);
                return finish(lua, desc, Answer::Error(packed.raw_get(2)?));
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
                    return park(lua, desc, false, Answer::Yield);
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
) -> mlua::Result<(mlua::Result<Table>, Box<TxDescriptor>)> {
    {
        let context = TxContext::of(lua)?;
        *context.desc.borrow_mut() = Some(desc);
        context.running.set(true);
    }
    crate::transfer::moved::forget_attempt_moves(lua);
    let process = ProcessContext::of(lua)?;
    process.no_preempt.store(true, Ordering::Relaxed);
    drop(process);
    let returned = attempt.call::<Table>(args);
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
    answer: Answer,
) -> mlua::Result<(&'static str, mlua::Value)> {
    *TxContext::of(lua)?.pending.borrow_mut() = Some(Pending { desc, first });
    answer_of(answer)
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
    answer_of(answer)
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

fn answer_of(answer: Answer) -> mlua::Result<(&'static str, mlua::Value)> {
    Ok(match answer {
        Answer::Ok(packed) => ("ok", mlua::Value::Table(packed)),
        Answer::Error(error) => ("error", error),
        Answer::Retry => ("retry", mlua::Value::Nil),
        Answer::Yield => ("yield", mlua::Value::Nil),
    })
}
