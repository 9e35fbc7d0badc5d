//! Who holds which place in the deadlock detector's wake-up protocol
//! (`liveness.rs`): each process task one [`WakeState`], kept in its task-local slot
//! (for [`current_waker`]) and by the task itself (for its slices) from its first
//! slice; each host thread (module mode) one, kept in a thread-local
//! while host states are open on it. [`current_waker`] hands out the caller's counted
//! waker.
//!
//! # Invariants
//! - A process's place is created `ACTIVE` by its first slice; it was counted in the
//!   liveness at its spawn (`RuntimeShared::spawn`). Its task-local slot lets go of it
//!   when the process finishes ([`process_finished`]): the place holds a waker of the
//!   task, and the task's record holds the slot, so keeping it would keep the record
//!   (and the place) alive forever.
//! - A host thread is counted from its first open host state to the close of its last.

use crate::liveness::{Liveness, WakeState};
use std::cell::RefCell;
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

thread_local! {
    /// The host state(s) open on this OS thread: the thread's place in the protocol
    /// and how many host states share it. A host thread is an OS thread, never a task,
    /// so a thread-local is its own.
    static HOST: RefCell<Option<(Arc<WakeState>, usize)>> = const { RefCell::new(None) };
}

/// A process task's place in the protocol, set by its first slice, taken back when it
/// finishes.
type ProcessSlot = RefCell<Option<Arc<WakeState>>>;

/// A waker for the caller, counted in its runtime's liveness: the current process's,
/// or the current host thread's. Outside both (a Rust thread that never opened a host
/// state), the scheduler's plain waker.
pub(crate) fn current_waker() -> Waker {
    if let Some(state) = process_state() {
        return state.waker();
    }
    HOST.with_borrow(|host| host.as_ref().map(|(state, _)| state.waker()))
        .unwrap_or_else(lutra_sched::current_waker)
}

/// The current process's place, `None` outside process tasks.
fn process_state() -> Option<Arc<WakeState>> {
    let slot = lutra_sched::task_local(ProcessSlot::default)?;
    // SAFETY: the current task's own value, used by the task itself within this call.
    unsafe { slot.as_ref() }.borrow().clone()
}

/// A process slice starts (`was_parked`: the last one ended in `Park`). `place` is
/// the process's place as its task keeps it (no task-local lookup per slice): made
/// at the first slice, and put in the task-local slot for [`current_waker`] then.
#[inline]
pub(crate) fn process_resumed(
    liveness: &Arc<Liveness>,
    was_parked: bool,
    place: &mut Option<Arc<WakeState>>,
) {
    if let Some(state) = place {
        if was_parked {
            state.resumed();
        }
        return;
    }
    first_resumed(liveness, place);
}

/// [`process_resumed`] at a process's first slice: makes its place.
#[cold]
fn first_resumed(liveness: &Arc<Liveness>, place: &mut Option<Arc<WakeState>>) {
    let Some(slot) = lutra_sched::task_local(ProcessSlot::default) else {
        return;
    };
    // SAFETY: the current task's own value, used by the task itself in this call.
    let slot = unsafe { slot.as_ref() };
    let state = slot
        .borrow_mut()
        .get_or_insert_with(|| WakeState::new(liveness.clone(), lutra_sched::current_waker()))
        .clone();
    *place = Some(state);
}

/// The current process task has finished: its task-local slot lets go of its place
/// (module invariants).
pub(crate) fn process_finished() {
    if let Some(slot) = lutra_sched::task_local(ProcessSlot::default) {
        // SAFETY: the current task's own value, used by the task itself in this call.
        unsafe { slot.as_ref() }.borrow_mut().take();
    }
}

/// A process slice ended in `Park`, after the process registered its wakers (`place`:
/// as [`process_resumed`] left it).
pub(crate) fn process_parked(place: Option<&Arc<WakeState>>) {
    if let Some(state) = place {
        state.park();
    }
}

/// A host state opened on the calling thread.
pub(crate) fn host_opened(liveness: &Arc<Liveness>) {
    HOST.with_borrow_mut(|host| match host {
        Some((_, states)) => *states += 1,
        None => {
            liveness.add();
            let state = WakeState::new(liveness.clone(), lutra_sched::current_waker());
            *host = Some((state, 1));
        }
    });
}

/// A host state of the calling thread closed.
pub(crate) fn host_closed(liveness: &Liveness) {
    HOST.with_borrow_mut(|host| {
        if let Some((_, states)) = host {
            *states -= 1;
            if *states == 0 {
                *host = None;
                liveness.remove();
            }
        }
    });
}

/// Parks the calling host thread until it is woken or `timeout` passes; returns
/// whether nothing can ever wake it (the liveness read zero while it was parked).
pub(crate) fn park_host(liveness: &Liveness, timeout: Duration) -> bool {
    let Some(state) = HOST.with_borrow(|host| host.as_ref().map(|(s, _)| s.clone())) else {
        std::thread::park_timeout(timeout);
        return false;
    };
    let mut stuck = false;
    if state.park() {
        stuck = liveness.nothing_awake();
        if !stuck {
            std::thread::park_timeout(timeout);
        }
        state.resumed();
    }
    stuck
}
