//! Transactions abandoned by a jump: a C program that `longjmp`s (or `siglongjmp`s)
//! out of a running transaction, to a point outside the frame that began it, never
//! ends it. Left running, its attempt would hold the engine's solo gate (another
//! thread's `stm_init_thread` would wait forever) and every later transaction of the
//! thread would join it (flat nesting) and be lost with it.
//!
//! The library interposes `longjmp`, `_longjmp`, `siglongjmp` and `__longjmp_chk`
//! (what `longjmp` becomes under `_FORTIFY_SOURCE`): before the C library's jump, a
//! jump whose target lies above the frame of the calling thread's running
//! transaction (the frame whose `sigsetjmp` its restarts go back to, or
//! `__transaction_atomic`'s checkpoint) rolls that transaction back, as an abort
//! that is not retried would: nothing it wrote stays, its locks and the solo gate
//! are released, `stm_active()` is 0 afterwards and `stm_aborted()` 1. Jumps within
//! the transaction (its own restarts included) are left alone.
//!
//! Only on x86-64 Linux with the GNU C library, whose jump buffers keep the stack
//! pointer mangled with the thread's pointer guard (`%fs:0x30`, rotated by 17
//! bits): the guard is read to compare the two stack pointers. Elsewhere the
//! functions are not interposed.
//!
//! # Invariants
//! - The check runs before the jump and owns nothing when it hands over to the C
//!   library's function.
//! - The transaction's frame counts as left only if its saved stack pointer lies
//!   at or above the current one (a frame that can still be live) and below the
//!   jump's target. (A jump buffer the program did not fill after `stm_start`, as
//!   stm.h requires, holds a stale or meaningless stack pointer, which is taken for
//!   a left frame only if it happens to fall in that range.)
//! - The library's own restart jumps target the transaction's frame itself: never
//!   above it.

/// The interposed functions (x86-64 Linux with the GNU C library).
#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
pub mod imp {
    use crate::fast;
    use crate::thread::{self, ThreadTx, with_thread};
    use std::ffi::{c_int, c_void};

    /// The index of the stack pointer in glibc's x86-64 `__jmp_buf`.
    const JB_RSP: usize = 6;

    /// The calling thread's pointer guard (glibc's `tcbhead_t.pointer_guard`).
    fn pointer_guard() -> usize {
        let guard: usize;
        // SAFETY: reads one word of the calling thread's control block, which glibc
        // keeps at `%fs:0x30` on x86-64 for the whole life of the thread.
        unsafe {
            std::arch::asm!(
                "mov {guard}, qword ptr fs:[0x30]",
                guard = out(reg) guard,
                options(nostack, readonly, preserves_flags),
            );
        }
        guard
    }

    /// The stack pointer saved in the jump buffer `buffer`.
    ///
    /// # Safety
    /// `buffer` must be readable for a `jmp_buf`.
    unsafe fn saved_stack_pointer(buffer: *const usize, guard: usize) -> usize {
        // SAFETY: the caller's contract.
        let mangled = unsafe { buffer.add(JB_RSP).read() };
        mangled.rotate_right(17) ^ guard
    }

    /// The current stack pointer (an approximation from below of the caller's).
    #[inline(always)]
    fn stack_pointer() -> usize {
        let sp: usize;
        // SAFETY: reads a register.
        unsafe {
            std::arch::asm!("mov {sp}, rsp", sp = out(reg) sp, options(nomem, nostack, preserves_flags));
        }
        sp
    }

    /// Step 1 of a jump to `target`: rolls back the calling thread's transaction if
    /// the jump leaves it.
    ///
    /// # Safety
    /// `target` must be a `jmp_buf` filled by `setjmp` / `sigsetjmp`.
    unsafe fn before_jump(target: *const c_void) {
        let guard = pointer_guard();
        // SAFETY: the caller's contract.
        let target_sp = unsafe { saved_stack_pointer(target.cast(), guard) };
        let here = stack_pointer();
        let check = |state: &mut ThreadTx| {
            if state.nesting == 0 {
                return;
            }
            #[allow(clippy::needless_late_init, reason = "set on either branch")]
            let frame_sp;
            if state.itm.active {
                frame_sp = state.itm.checkpoint.stack_pointer();
            } else {
                // SAFETY: the state's jump buffer, always allocated and readable.
                frame_sp = unsafe { saved_stack_pointer(state.env().cast(), guard) };
            }
            if frame_sp >= here && target_sp > frame_sp {
                state.abandon();
            }
        };
        // SAFETY: entered from C; the reference ends with this call.
        if let Some(state) = unsafe { fast::state() } {
            check(state);
        } else if thread::is_registered() {
            let _ = with_thread(|state| {
                check(state);
                Ok(())
            });
        }
    }

    /// Defines an interposed jump function: the check, then the C library's.
    macro_rules! interpose {
        ($($name:ident),*) => {$(
            #[doc = concat!("The C library's `", stringify!($name), "`, after rolling back a transaction the jump leaves (see the module).")]
            ///
            /// # Safety
            /// As the C library's function.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name(env: *mut c_void, value: c_int) -> ! {
                // SAFETY: `env` was filled by `setjmp` (the C library's contract).
                unsafe { before_jump(env) };
                let name = concat!(stringify!($name), "\0");
                let function = crate::interpose::next(
                    std::ffi::CStr::from_bytes_with_nul(name.as_bytes()).unwrap_or(c"longjmp"),
                );
                let function: unsafe extern "C" fn(*mut c_void, c_int) -> ! =
                    // SAFETY: the C library's function of this very signature.
                    unsafe { std::mem::transmute(function) };
                // SAFETY: the caller's contract.
                unsafe { function(env, value) }
            }
        )*};
    }

    interpose!(longjmp, _longjmp, siglongjmp, __longjmp_chk);
}

impl crate::thread::ThreadTx {
    /// Rolls back the running transaction, which the program left by a jump: as an
    /// abort that is not retried, it is over (`stm_aborted` is 1), whatever its
    /// nesting.
    #[cold]
    #[inline(never)]
    pub(crate) fn abandon(&mut self) {
        let reason = self
            .desc
            .doomed()
            .unwrap_or(lutra_stm::AbortReason::Explicit);
        self.desc.rollback(reason);
        self.pending = None;
        self.nesting = 0;
        self.ended_by_abort = true;
        self.plain_ready = false;
        if self.solo_paused {
            self.solo_paused = false;
            self.desc.allow_solo(true);
        }
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        self.itm.abandon();
    }
}
