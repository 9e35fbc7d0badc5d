//! The state of a thread (or task) registered with `stm_init_thread`: its transaction
//! descriptor, its jump buffer, flat-nesting depth, the running transaction's
//! attributes, and its statistics. It lives in the caller's [`Locals`](crate::locals::Locals) (a Rust
//! thread-local, or the task's own value in a task: see `locals.rs`), boxed so that
//! its address (the `struct stm_tx *` handle C sees) stays put.
//!
//! # Invariants
//! - `nesting > 0` exactly when `desc` has an attempt running (possibly doomed).
//! - `pending` is `Some` only while the running attempt is doomed by an abort that a
//!   status-style accessor reported and nobody has rolled back yet.
//! - The state is only reached through [`with_thread`], which borrows it for the
//!   duration of one call into the engine; no C code runs while it is borrowed. In a
//!   task the borrow may last across a suspension of the task (an engine wait): it is
//!   the task's own state, which no other task reaches.
//! - `env` is the jump buffer of this thread or task alone: a task suspended between
//!   its `sigsetjmp` and the end of its transaction finds it unchanged, whatever the
//!   other tasks of its worker did meanwhile.
//! - Dropping the state first empties the fast-path slot if it holds the state
//!   (`fast.rs`), then rolls back any running attempt (the descriptor's `Drop`), then
//!   unregisters the thread (field order), then frees the jump buffer.
//! - The state is owned through a raw pointer ([`OwnedThreadTx`]) from which both
//!   [`with_thread`] and the fast path (`fast.rs`, for a plain thread) derive their
//!   references, one at a time.

use crate::engine::{self, Registration};
use crate::fast;
use crate::lifecycle::StmTx;
use crate::locals;
use crate::shim::{self, JumpBuffer, SigJmpBuf};
use crate::stats::LocalStats;
use crate::status::{CapiError, CapiResult, LUTRA_ENOMEM};
use lutra_stm::TxDescriptor;
use std::ffi::c_int;
use std::ptr::NonNull;

/// The attributes of a transaction, decoded from tinySTM's `stm_tx_attr_t` by the shim.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Attributes {
    /// The whole union, as given (returned by `stm_get_attributes`).
    pub(crate) raw: i32,
    /// The application's transaction id: Lutra's statistics site.
    pub(crate) id: u32,
    /// The read-only hint: the transaction's first attempt keeps no read set
    /// ([`TxOptions::read_only`](lutra_stm::TxOptions)).
    pub(crate) read_only: bool,
    /// End the transaction on abort instead of restarting it.
    pub(crate) no_retry: bool,
}

/// Where the bit-fields of `stm_tx_attr_t` lie in its `attrs` integer, as the C
/// compiler lays them out (asked once per thread from the shim).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AttrLayout {
    id: i32,
    read_only: i32,
    no_retry: i32,
}

impl AttrLayout {
    fn of_c_compiler() -> Self {
        let (mut id, mut read_only, mut no_retry) = (0, 0, 0);
        shim::lutra_shim_attr_layout(&mut id, &mut read_only, &mut no_retry);
        debug_assert!(id != 0 && read_only != 0 && no_retry != 0);
        Self {
            id,
            read_only,
            no_retry,
        }
    }

    /// The attributes held by `raw` (`stm_tx_attr_t.attrs`).
    #[inline(always)]
    pub(crate) fn decode(self, raw: i32) -> Attributes {
        Attributes {
            raw,
            id: ((raw & self.id) as u32) >> self.id.trailing_zeros(),
            read_only: raw & self.read_only != 0,
            no_retry: raw & self.no_retry != 0,
        }
    }

    /// Whether `raw` holds no attribute at all (the common case: `stm_tx_attr_t`
    /// zeroed). A read-only transaction takes the general begin, which honours the
    /// hint.
    #[inline(always)]
    pub(crate) fn no_attributes(self, raw: i32) -> bool {
        raw == 0
    }

    /// The attributes with the read-only hint alone (id 0).
    #[inline]
    pub(crate) fn read_only_alone(self) -> i32 {
        self.read_only
    }
}

/// A registered thread (see the module header).
pub(crate) struct ThreadTx {
    pub(crate) desc: TxDescriptor,
    /// Flat nesting depth: `stm_start` calls not yet matched by `stm_commit`.
    pub(crate) nesting: u32,
    /// The running (or last) transaction's attributes, as given
    /// (`stm_tx_attr_t.attrs`); [`ThreadTx::attributes`] decodes them.
    pub(crate) attr_raw: i32,
    /// The last transaction ended by an abort that was not retried (`stm_aborted`).
    pub(crate) ended_by_abort: bool,
    /// `stm_set_irrevocable` was called outside a transaction: the next one starts
    /// irrevocable.
    pub(crate) irrevocable_next: bool,
    /// The abort code of a doomed attempt not yet rolled back.
    pub(crate) pending: Option<c_int>,
    pub(crate) stats: LocalStats,
    _registration: Registration,
    /// The jump buffer `stm_start` returns (see the module invariants).
    env: JumpBuffer,
    /// Registered by a task (whose state is task-local): `stm_start` announces its
    /// transactions to the scheduler.
    pub(crate) in_task: bool,
    /// How to decode `stm_tx_attr_t` without the shim (fast `stm_start`).
    pub(crate) layout: AttrLayout,
    /// The transaction was begun through GCC's ABI (`itm/`): how it restarts.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    pub(crate) itm: crate::itm::ItmFrame,
    /// Solo attempts are off until the next commit: a solo attempt called
    /// `stm_retry`, and its re-run must keep a read set to wait on.
    pub(crate) solo_paused: bool,
    /// The last transaction ended by the straight commit (`try_commit_plain`) and
    /// nothing has begun or been asked of the next one since: no transaction runs,
    /// none is to start irrevocable, none ended by an abort, no abort is counted or
    /// pending — all that `try_begin_plain` needs, told by one flag. Cleared by every
    /// begin and by [`ThreadTx::start_next_irrevocable`].
    pub(crate) plain_ready: bool,
}

impl ThreadTx {
    /// The running (or last) transaction's attributes.
    pub(crate) fn attributes(&self) -> Attributes {
        self.layout.decode(self.attr_raw)
    }
}

impl Drop for ThreadTx {
    fn drop(&mut self) {
        // Before the fields: no fast-path call may reach a state being dropped, and
        // its descriptor must roll back through its own undo window.
        // SAFETY: `self` is live, and borrowed only here.
        unsafe { fast::withdraw(self) };
    }
}

/// The owner of a boxed [`ThreadTx`], through a raw pointer (see the module
/// invariants).
pub(crate) struct OwnedThreadTx(NonNull<ThreadTx>);

// SAFETY: the pointer is the unique owner of a `Box<ThreadTx>`, and `ThreadTx` is
// `Send` (checked below); moving the owner moves the box.
unsafe impl Send for OwnedThreadTx {}

const _: fn() = || {
    fn send<T: Send>() {}
    send::<ThreadTx>();
};

impl OwnedThreadTx {
    fn new(state: Box<ThreadTx>) -> Self {
        Self(NonNull::from(Box::leak(state)))
    }

    /// The state, for the fast path's slot.
    pub(crate) fn as_ptr(&self) -> *mut ThreadTx {
        self.0.as_ptr()
    }

    /// The state, for one call into the engine.
    fn get_mut(&mut self) -> &mut ThreadTx {
        // SAFETY: this owner is the only way to the state besides the fast path, which
        // never runs while this borrow lives (module invariants).
        unsafe { self.0.as_mut() }
    }
}

impl Drop for OwnedThreadTx {
    fn drop(&mut self) {
        // SAFETY: the pointer came from `Box::leak` in `new` and is dropped once, here.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

impl ThreadTx {
    /// Fails unless a transaction is active.
    pub(crate) fn require_transaction(&self) -> CapiResult<()> {
        if self.nesting == 0 {
            return Err(CapiError::no_transaction());
        }
        debug_assert!(self.desc.is_active(), "nesting without a running attempt");
        Ok(())
    }

    /// Fails if a transaction is active.
    pub(crate) fn require_no_transaction(&self) -> CapiResult<()> {
        if self.nesting > 0 {
            return Err(CapiError::in_transaction());
        }
        Ok(())
    }

    /// The opaque handle C sees as `struct stm_tx *`.
    pub(crate) fn handle(&mut self) -> *mut StmTx {
        (self as *mut ThreadTx).cast()
    }

    /// The jump buffer of this thread or task.
    pub(crate) fn env(&self) -> *mut SigJmpBuf {
        self.env.as_ptr()
    }
}

/// Runs `body` on the calling thread's (or task's) state.
///
/// # Errors
/// `LUTRA_ENOTHREAD` when the thread is not registered (or is exiting);
/// `LUTRA_EINTX` in a signal handler that interrupted the thread's transaction
/// (`signals.rs`); whatever `body` returns.
pub(crate) fn with_thread<R>(body: impl FnOnce(&mut ThreadTx) -> CapiResult<R>) -> CapiResult<R> {
    if crate::signals::hidden() {
        return Err(CapiError::in_interrupting_handler());
    }
    locals::with(|locals| {
        let mut current = locals
            .tx
            .try_borrow_mut()
            .map_err(|_| CapiError::invalid("re-entered from inside the library"))?;
        match current.as_mut() {
            Some(state) => body(state.get_mut()),
            None => Err(CapiError::no_thread()),
        }
    })
    .unwrap_or_else(|| Err(CapiError::no_thread()))
}

/// Whether the calling thread (or task) is registered.
pub(crate) fn is_registered() -> bool {
    locals::with(|locals| locals.tx.try_borrow().is_ok_and(|state| state.is_some()))
        .unwrap_or(false)
}

/// Registers the calling thread or task (or returns its existing registration).
pub(crate) fn register() -> CapiResult<*mut StmTx> {
    if is_registered() {
        return with_thread(|state| Ok(state.handle()));
    }
    let env = JumpBuffer::new()
        .ok_or_else(|| CapiError::new(LUTRA_ENOMEM, "no memory for a jump buffer"))?;
    let (stm, registration) = engine::register()?;
    let mut desc = TxDescriptor::new(&stm).map_err(|_full| engine::too_many_threads())?;
    let in_task = lutra_sched::current_task().is_some();
    // Solo attempts are for plain threads: tasks of one worker interleave, and a
    // task that registers while another's solo attempt is suspended would wait.
    desc.allow_solo(!in_task && engine::solo_allowed());
    let state = OwnedThreadTx::new(Box::new(ThreadTx {
        desc,
        nesting: 0,
        attr_raw: 0,
        ended_by_abort: false,
        irrevocable_next: false,
        pending: None,
        stats: LocalStats::new(),
        _registration: registration,
        env,
        in_task,
        layout: AttrLayout::of_c_compiler(),
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        itm: crate::itm::ItmFrame::default(),
        solo_paused: false,
        plain_ready: false,
    }));
    let pointer = state.as_ptr();
    let plain = locals::with(|locals| {
        *locals.tx.borrow_mut() = Some(state);
        locals::is_plain_thread()
    })
    .ok_or_else(CapiError::no_thread)?;
    if plain {
        // SAFETY: the calling plain thread's registered state, boxed (its address is
        // final); its `Drop` withdraws it.
        unsafe { fast::publish(pointer) };
    }
    Ok(pointer.cast())
}

/// Unregisters the calling thread or task, which must not be inside a transaction.
pub(crate) fn unregister() -> CapiResult<()> {
    with_thread(|state| state.require_no_transaction())?;
    discard();
    Ok(())
}

/// Drops the calling thread's (or task's) state, rolling back whatever runs.
pub(crate) fn discard() {
    let state = locals::with(|locals| {
        locals
            .tx
            .try_borrow_mut()
            .ok()
            .and_then(|mut state| state.take())
    })
    .flatten();
    drop(state);
}

/// Where a restarted transaction of the calling thread (or task) goes back to.
pub(crate) enum RestartTarget {
    /// The `sigsetjmp` of `stm.h`'s transactions.
    Buffer(*mut SigJmpBuf),
    /// The checkpoint of `_ITM_beginTransaction`, with what to do first.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    Checkpoint(crate::itm::Resumption),
}

/// Where the calling thread's (or task's) transaction, which has just begun a fresh
/// attempt, restarts from; `None` if the thread is not registered.
pub(crate) fn restart_target() -> Option<RestartTarget> {
    with_thread(|state| {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if state.itm.active {
            return Ok(RestartTarget::Checkpoint(crate::itm::Resumption::prepare(
                state, true,
            )));
        }
        Ok(RestartTarget::Buffer(state.env()))
    })
    .ok()
}

/// Whether the calling thread or task runs a transaction (of the C API, or a Rust
/// `atomically` closure on this thread).
pub(crate) fn in_transaction() -> bool {
    with_thread(|state| Ok(state.nesting > 0)).unwrap_or(false) || lutra_stm::in_transaction()
}
