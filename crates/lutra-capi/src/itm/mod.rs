//! GCC's transactional-memory ABI (libitm's, after Intel's TM ABI 1.1): what
//! `gcc -fgnu-tm` emits for `__transaction_atomic`, `__transaction_relaxed`,
//! `__transaction_cancel` and `transaction_safe` functions, implemented on Lutra's
//! engine. A program built for libitm runs on Lutra unchanged by loading Lutra's
//! `libitm.so.1` (`scripts/build-itm.sh` links it from `liblutra.a` with libitm's
//! symbol version, `LIBITM_1.0`) instead of GCC's: through `LD_LIBRARY_PATH`, or by
//! linking against it.
//!
//! # Shape
//! An ABI transaction is a transaction of the C ABI: the same per-thread state
//! (`thread.rs`, registered on the first `_ITM_beginTransaction` of a thread, the
//! engine started from the environment as `stm_init` does), the same flat nesting,
//! statistics, contention managers and scheduler integration; `stm.h` calls made
//! inside it (`stm_retry`, statistics) act on it. What differs is how an attempt
//! restarts: instead of a `siglongjmp`, the register checkpoint taken by
//! `_ITM_beginTransaction` (`checkpoint.rs`) is restored, which makes that call
//! return again with new action bits.
//!
//! | file | job |
//! |------|-----|
//! | `checkpoint.rs` | the register checkpoint: `_ITM_beginTransaction`'s entry, the resume |
//! | `transaction.rs` | begin, commit, cancel, irrevocability |
//! | `thread_state.rs` | how the ABI's functions reach the thread's state |
//! | `queries.rs` | `_ITM_inTransaction`, `_ITM_getTransactionId` |
//! | `retry_callers.rs` | whether the program can call `stm_retry` (scans the loaded objects) |
//! | `actions.rs` | user commit and undo actions, `_ITM_dropReferences` |
//! | `library.rs` | the library's identity, `_ITM_error`, stopping on misuse |
//! | `barriers.rs` | `_ITM_R*` / `_ITM_W*` for every type and variant |
//! | `transfer.rs` | `_ITM_memcpy*`, `_ITM_memmove*`, `_ITM_memset*`, and the `_ITM_L*` undo log |
//! | `clones.rs` | clone tables of `transaction_safe` functions; `_ITM_malloc` / `_ITM_free` |
//!
//! # Protocol: a restart
//! 1. An access, a commit, or a mode change meets an abort; the C ABI's abort path
//!    rolls the attempt back and begins the next one (`attempt.rs`), returning a
//!    status with `STM_PATH_INSTRUMENTED`.
//! 2. The trampoline, owning nothing, calls `shim::jump_if_restarted`, which finds
//!    the thread's `ItmFrame` active: it restores the words logged by `_ITM_L*`
//!    (newest first), takes the user undo actions, and resumes at the checkpoint
//!    with `a_runInstrumentedCode | a_restoreLiveVariables`.
//! 3. GCC's code restores its live variables and runs the transaction again.
//!
//! A cancel (`__transaction_cancel`, `_ITM_abortTransaction(userAbort)`) ends the
//! transaction instead and resumes with `a_abortTransaction | a_restoreLiveVariables`.
//!
//! # Invariants
//! - `ItmFrame::active` holds exactly while an outermost transaction begun by
//!   `_ITM_beginTransaction` runs on the thread; its checkpoint then lies in a frame
//!   that is still live (the caller of `_ITM_beginTransaction`, which GCC keeps until
//!   the transaction ends).
//! - Between a resume and its checkpoint lie only frames of GCC's code and
//!   trampolines that own nothing (as for the `siglongjmp` of `stm.h`).
//! - Code without barriers (GCC's uninstrumented path, unsafe calls after
//!   `_ITM_changeTransactionMode`) runs only in a serial attempt
//!   (`TxDescriptor::become_serial`): alone in the engine, irrevocable.
//! - A transaction that has both paths and cannot cancel runs its uninstrumented
//!   path when its attempt begins solo (its thread is the engine's only one, as
//!   GCC's libitm runs a lone thread's transactions serially and uninstrumented)
//!   and no loaded object can call `stm_retry` (`retry_callers.rs`: such an attempt
//!   cannot roll back, and a retry must): the attempt turns serial first, which for
//!   a straight solo attempt is one store of its mode (`SoloSerialStraight`) and
//!   keeps its commit straight. A thread that registers meanwhile waits at the solo
//!   gate until the attempt has ended; the next attempt of the first thread is
//!   instrumented then, since it no longer begins solo.
//! - Nesting is flat: an inner transaction joins the outer one; a cancel of an inner
//!   level alone (not `[[outer]]`) cannot be undone separately and stops the process
//!   with a message.
//!
//! x86-64 only: the checkpoint is architecture-specific assembly.

pub mod actions;
pub mod barriers;
pub mod checkpoint;
pub mod clones;
pub mod library;
pub mod queries;
pub(crate) mod retry_callers;
mod thread_state;
pub mod transaction;
pub mod transfer;

pub(crate) use checkpoint::Checkpoint;
use checkpoint::resume;

use crate::thread::ThreadTx;
use std::ffi::c_void;

/// `_ITM_codeProperties`: the transaction has an instrumented code path.
const PR_INSTRUMENTED_CODE: u32 = 0x0001;
/// `_ITM_codeProperties`: the transaction has an uninstrumented code path.
const PR_UNINSTRUMENTED_CODE: u32 = 0x0002;
/// `_ITM_codeProperties`: the transaction contains no `__transaction_cancel`.
const PR_HAS_NO_ABORT: u32 = 0x0008;
/// `_ITM_actions`: run the instrumented path.
const A_RUN_INSTRUMENTED_CODE: u32 = 0x01;
/// `_ITM_actions`: run the uninstrumented path.
const A_RUN_UNINSTRUMENTED_CODE: u32 = 0x02;
/// `_ITM_actions`: save the live variables (first start).
const A_SAVE_LIVE_VARIABLES: u32 = 0x04;
/// `_ITM_actions`: restore the live variables (after a restart or a cancel).
const A_RESTORE_LIVE_VARIABLES: u32 = 0x08;
/// `_ITM_actions`: the transaction was cancelled; skip its body.
const A_ABORT_TRANSACTION: u32 = 0x10;

/// `_ITM_noTransactionId`: the id outside transactions.
const NO_TRANSACTION_ID: u64 = 1;

/// A user action of `_ITM_addUserCommitAction` / `_ITM_addUserUndoAction`.
pub(crate) type UserAction = unsafe extern "C" fn(arg: *mut c_void);

/// The ABI's part of a thread's transaction state (see the module invariants).
#[derive(Default)]
pub(crate) struct ItmFrame {
    /// An outermost transaction begun by `_ITM_beginTransaction` runs.
    pub(crate) active: bool,
    /// Where a restart resumes.
    pub(crate) checkpoint: Checkpoint,
    /// The running transaction runs its uninstrumented path, serial: it has no
    /// instrumented one, or its thread was alone with the engine when it began.
    pub(crate) uninstrumented_only: bool,
    /// The id of the running (or last) transaction: 2, 3, … (1 is "none").
    pub(crate) id: u64,
    /// Bytes saved by `_ITM_L*`: `(address, old bytes)`, oldest first.
    pub(crate) undo_log: Vec<(usize, Box<[u8]>)>,
    /// `_ITM_addUserCommitAction`s of the running transaction.
    pub(crate) commit_actions: Vec<(UserAction, usize)>,
    /// `_ITM_addUserUndoAction`s of the running transaction.
    pub(crate) undo_actions: Vec<(UserAction, usize)>,
}

impl ItmFrame {
    /// Restores what `_ITM_L*` logged, newest first, and forgets it.
    fn restore_logged(&mut self) {
        for (addr, bytes) in self.undo_log.drain(..).rev() {
            // SAFETY: `_ITM_L*` logged `bytes.len()` bytes at `addr`, memory that GCC's
            // code (the caller's frame, still live) owns and that no other thread
            // writes.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), addr as *mut u8, bytes.len()) };
        }
    }

    /// Forgets the running transaction, which the program left by a jump
    /// (`abandon.rs`): its logged bytes are not restored (the frames holding them
    /// are gone), its actions are dropped.
    pub(crate) fn abandon(&mut self) {
        self.active = false;
        self.undo_log.clear();
        self.undo_actions.clear();
        self.commit_actions.clear();
    }

    /// Forgets the running transaction's log and actions (it committed).
    fn clear(&mut self) {
        self.undo_log.clear();
        self.undo_actions.clear();
    }
}

/// Makes the fresh attempt on `state` serial before code without barriers runs,
/// rolling back and beginning again for as long as it is doomed (killed by another
/// serial attempt while it waited for the commit gate).
pub(crate) fn make_serial(state: &mut ThreadTx) {
    while let Err(abort) = state.desc.become_serial() {
        let code = crate::status::abort_code(abort.reason(), crate::status::Site::Commit);
        state.end_attempt(abort.reason(), code, false);
    }
}

/// What an ABI transaction restarting (or cancelled) on the calling thread must do
/// once the state is no longer borrowed: run the user undo actions, then resume.
pub(crate) struct Resumption {
    checkpoint: *const Checkpoint,
    actions: u32,
    undo_actions: Vec<(UserAction, usize)>,
}

impl Resumption {
    /// Step 2 of the restart protocol, on `state`, whose transaction was begun by
    /// `_ITM_beginTransaction` and has just been rolled back: a fresh attempt runs
    /// (`restarted`) or the transaction ended (a cancel).
    pub(crate) fn prepare(state: &mut ThreadTx, restarted: bool) -> Self {
        let frame = &mut state.itm;
        frame.restore_logged();
        let undo_actions = std::mem::take(&mut frame.undo_actions);
        frame.commit_actions.clear();
        let actions = if !restarted {
            frame.active = false;
            A_ABORT_TRANSACTION | A_RESTORE_LIVE_VARIABLES
        } else if frame.uninstrumented_only {
            make_serial(state);
            A_RUN_UNINSTRUMENTED_CODE | A_RESTORE_LIVE_VARIABLES
        } else {
            A_RUN_INSTRUMENTED_CODE | A_RESTORE_LIVE_VARIABLES
        };
        Self {
            checkpoint: &state.itm.checkpoint,
            actions,
            undo_actions,
        }
    }

    /// Runs the undo actions (newest first) and resumes at the checkpoint.
    ///
    /// # Safety
    /// The checkpoint's frame must be live and only frames that own nothing may lie
    /// above it (the module invariants); the state holding the checkpoint must not be
    /// borrowed.
    pub(crate) unsafe fn run(self) -> ! {
        let Self {
            checkpoint,
            actions,
            undo_actions,
        } = self;
        for (action, arg) in undo_actions.into_iter().rev() {
            // SAFETY: the program registered `action` for `arg`, to be called if the
            // transaction rolls back.
            unsafe { action(arg as *mut c_void) };
        }
        // SAFETY: the caller's contract; the checkpoint lives in the thread's boxed
        // state, which outlives the resume.
        unsafe { resume(checkpoint, actions) }
    }
}
