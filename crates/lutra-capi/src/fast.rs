//! The fast path's way to the calling thread's state: one initial-exec thread-local
//! slot, owned by the C shim (`lutra_shim_fast_state` in `c/shim.c`), that holds the
//! [`ThreadTx`] of a plain thread registered with `stm_init_thread`.
//!
//! `stm_start` and `stm_commit` read the slot first, and `stm_load` and `stm_store` in
//! their cold path (they test the read front first, below): a non-NULL slot is the
//! caller's own state, reached without `locals::with` (a general-dynamic
//! thread-local, `__tls_get_addr` in the shared library), without a `RefCell` borrow
//! and without a `catch_unwind` boundary. Everything else — NULL slot, misuse, a task
//! of the scheduler — takes the general path of `boundary.rs`.
//!
//! On x86-64 Linux the slot is read with the initial-exec sequence (`mov
//! sym@GOTTPOFF(%rip)`, then a `%fs`-relative load), which the linker relaxes to a
//! single `%fs`-relative load in a program linked with `liblutra.a`; elsewhere
//! through a call into the shim.
//!
//! # Invariants
//! - The slot is NULL or points to the live, registered state of the calling plain
//!   thread: [`publish`] is called by `thread::register` once the state is in its
//!   final place, and [`withdraw`] before the state is dropped (its owner's `Drop`).
//! - A worker of the scheduler never publishes: its tasks keep their state in
//!   task-locals (`locals.rs`), and a migrated task that reads a stale slot address
//!   reads another worker's slot, which is NULL too.
//! - A reference made from the slot lives for one ABI call, on the thread that owns
//!   the state, and never while `thread::with_thread` borrows the same state: no C
//!   code runs inside `with_thread` (see `thread.rs`), and the fast path is entered
//!   from C only.
//! - A panic on the fast path is a bug: the ABI functions are `extern "C"` (they
//!   cannot unwind), so it aborts the process with the panic's message.
//!
//! A second one, `lutra_shim_read_front`, points to the read front
//! ([`ReadFront`]) of the published state's descriptor, or to a closed front of the
//! shim's: `stm_load` tests the front's room first, which a thread with no state
//! fails, so it never tests the slot ([`TxDescriptor::try_load_through_front_mapped`]).
//! [`publish`] and [`withdraw`] move it with the slot.
//!
//! A third initial-exec variable, `lutra_thread_undo_window`, serves the inline
//! accesses of `stm.h` (`LUTRA_INLINE`): it is the window of the solo undo log
//! ([`lutra_stm::UndoWindow`]) of the state in the first slot itself, not a pointer
//! to it, so that the inline load tests it with one `%fs`-relative compare.
//! [`publish`] places the descriptor's window there
//! ([`TxDescriptor::place_solo_undo_window`](lutra_stm::TxDescriptor::place_solo_undo_window)),
//! and [`withdraw`] moves it back into the descriptor, leaving the variable closed
//! (both pointers NULL, as on a thread that never registered and on every worker of
//! the scheduler). C code writes the window only between ABI calls, so never while
//! Rust code borrows the state.
//!
//! Programs reach that variable through [`lutra_thread_undo_window_offset`], its
//! offset from the thread pointer, which the shim's constructor stores before any
//! code of the program runs: the shared library cannot export the shim's
//! thread-local itself (only Rust items are exported from it), and the offset
//! serves a program linked with `liblutra.a`, one linked with `liblutra.so` and a
//! library loaded with `dlopen` alike (the variable is in static TLS, at the same
//! offset on every thread).

use crate::thread::ThreadTx;
use lutra_stm::{ReadFront, TxDescriptor, UndoWindow};
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::atomic::AtomicIsize;

/// The offset of the calling thread's undo window (the shim's
/// `lutra_thread_undo_window`) from the thread pointer, the same on every thread:
/// what `stm.h`'s inline accesses (`LUTRA_INLINE`) add to the thread pointer.
///
/// Written once, by the shim's constructor (`c/shim.c`), when the library is loaded
/// (before the program's constructors and `main`), and never again; read by C code
/// only. Until then it holds `isize::MIN`, which makes any inline access fault (a
/// non-canonical address) instead of touching memory.
#[unsafe(no_mangle)]
pub(crate) static lutra_thread_undo_window_offset: AtomicIsize = AtomicIsize::new(isize::MIN);

unsafe extern "C" {
    /// Sets the calling thread's slot.
    fn lutra_shim_set_fast_state(state: *mut c_void);
    /// Points the calling thread's read front at `front` (the closed front if NULL).
    fn lutra_shim_set_read_front(front: *mut c_void);
    /// The calling thread's read front (targets without an inline sequence).
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    safe fn lutra_shim_get_read_front() -> NonNull<ReadFront>;
    /// The calling thread's undo window (`lutra_thread_undo_window`).
    safe fn lutra_shim_undo_window() -> NonNull<UndoWindow>;
    /// The calling thread's slot (targets without an inline sequence).
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    safe fn lutra_shim_get_fast_state() -> *mut c_void;
}

/// The word in the shim's initial-exec `__thread` variable `$symbol`, as a pointer.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
macro_rules! initial_exec_word {
    ($symbol:literal) => {{
        let word: *mut c_void;
        // SAFETY: the initial-exec access sequence of the x86-64 ELF TLS ABI for a
        // `__thread` variable of the shim declared with `tls_model("initial-exec")`:
        // the GOT entry holds the variable's offset from the thread pointer (%fs),
        // valid on every thread. It reads one word and writes nothing but the output
        // register.
        unsafe {
            std::arch::asm!(
                concat!("mov {word}, qword ptr [rip + ", $symbol, "@GOTTPOFF]"),
                "mov {word}, qword ptr fs:[{word}]",
                word = out(reg) word,
                options(nostack, readonly, preserves_flags),
            );
        }
        word
    }};
}

/// The slot's value: the calling thread's state or NULL.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[inline(always)]
fn slot() -> *mut ThreadTx {
    initial_exec_word!("lutra_shim_fast_state").cast()
}

/// The slot's value: the calling thread's state or NULL.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
#[inline(always)]
fn slot() -> *mut ThreadTx {
    lutra_shim_get_fast_state().cast()
}

/// The calling thread's read front: its published state's descriptor's, or a closed
/// one (never NULL), for [`TxDescriptor::try_load_through_front_mapped`].
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[inline(always)]
pub(crate) fn read_front() -> NonNull<ReadFront> {
    let front = initial_exec_word!("lutra_shim_read_front").cast();
    // SAFETY: the shim's variable always points to a front (its invariants).
    unsafe { NonNull::new_unchecked(front) }
}

/// The calling thread's read front (see above).
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
#[inline(always)]
pub(crate) fn read_front() -> NonNull<ReadFront> {
    lutra_shim_get_read_front()
}

/// The calling thread's state, if it is a registered plain thread.
///
/// # Safety
/// Only from an ABI function entered from C, and the reference must not outlive the
/// call (see the module invariants).
#[inline(always)]
pub(crate) unsafe fn state<'a>() -> Option<&'a mut ThreadTx> {
    // SAFETY: the slot is NULL or this thread's live state, not borrowed elsewhere
    // during this call (module invariants; the caller's contract).
    unsafe { slot().as_mut() }
}

/// Makes `state` the calling thread's fast-path state.
///
/// # Safety
/// `state` must be the calling plain thread's registered state, at its final address,
/// and [`withdraw`] must be called before it is dropped or moved.
pub(crate) unsafe fn publish(state: *mut ThreadTx) {
    // SAFETY: writes the calling thread's own slot and places the state's undo
    // window in the thread's own variable, which lives as long as the thread; the
    // state of a plain thread is used and dropped on that thread only, and
    // `withdraw` moves the window back before the state is dropped.
    unsafe {
        (*state)
            .desc
            .place_solo_undo_window(Some(lutra_shim_undo_window()));
        lutra_shim_set_fast_state(state.cast());
        // Derived from the pointer to the whole state, as the engine requires.
        let front =
            state.byte_add(std::mem::offset_of!(ThreadTx, desc) + TxDescriptor::READ_FRONT_OFFSET);
        lutra_shim_set_read_front(front.cast());
    }
}

/// Empties the calling thread's slot if it holds `state` (a task's state, or one
/// dropped on another thread, was never there), and moves the state's undo window
/// back into its descriptor, with whatever a running solo attempt logged there: the
/// thread's variable is left closed.
///
/// # Safety
/// `state` must be live and not borrowed elsewhere during the call.
pub(crate) unsafe fn withdraw(state: *mut ThreadTx) {
    if slot() == state {
        // SAFETY: writes the calling thread's own slot; `state` is live and unborrowed
        // (the caller's contract), and the descriptor's own window is always valid.
        unsafe {
            lutra_shim_set_fast_state(std::ptr::null_mut());
            lutra_shim_set_read_front(std::ptr::null_mut());
            (*state).desc.place_solo_undo_window(None);
        }
    }
}

/// What [`hide`] took away from the calling thread's variables, for [`unhide`].
pub(crate) struct Hidden {
    state: *mut ThreadTx,
    front: NonNull<ReadFront>,
    window: UndoWindow,
}

/// Closes the calling thread's slot, read front and undo window while a signal
/// handler runs on a thread whose transaction it interrupted (`signals.rs`), so that
/// no fast path reaches that transaction; `None` (nothing changed) when the slot is
/// empty or its state runs no transaction.
///
/// # Safety
/// From a signal handler's entry on the calling thread; [`unhide`] must follow on
/// the same thread before the interrupted code resumes.
pub(crate) unsafe fn hide() -> Option<Hidden> {
    let state = slot();
    if state.is_null() {
        return None;
    }
    // SAFETY: the slot holds the thread's live state (invariants); the interrupted
    // code that may be using it is suspended until the handler returns, and these
    // reads change nothing.
    let busy = unsafe { (*state).nesting != 0 || (*state).desc.is_active() };
    if !busy {
        return None;
    }
    let window = lutra_shim_undo_window().as_ptr();
    // SAFETY: the thread's own variables; the window is two pointers, and zero is
    // the closed window.
    let saved = unsafe {
        let saved = window.read();
        window.write_bytes(0, 1);
        lutra_shim_set_fast_state(std::ptr::null_mut());
        saved
    };
    let front = read_front();
    // SAFETY: as above: the closed front while hidden.
    unsafe { lutra_shim_set_read_front(std::ptr::null_mut()) };
    Some(Hidden {
        state,
        front,
        window: saved,
    })
}

/// Puts back what [`hide`] took away.
///
/// # Safety
/// `hidden` came from [`hide`] on the calling thread, in the signal handler that is
/// returning.
pub(crate) unsafe fn unhide(hidden: Hidden) {
    // SAFETY: restores the thread's own variables exactly as `hide` found them.
    unsafe {
        lutra_shim_set_fast_state(hidden.state.cast());
        lutra_shim_set_read_front(hidden.front.as_ptr().cast());
        lutra_shim_undo_window().as_ptr().write(hidden.window);
    }
}
