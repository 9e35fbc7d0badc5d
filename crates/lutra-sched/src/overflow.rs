//! Stack overflows of native tasks, reported as the task's failure (Linux, x86-64).
//!
//! Every native stack has a guard page below it, so an overflow faults. A `SIGSEGV` /
//! `SIGBUS` handler, running on the worker's alternate signal stack, checks whether the
//! faulting stack pointer lies in the stack of the task the worker is resuming:
//! - outside a transaction, it resets the task's stack and makes it return (corosensei's
//!   trap handler): the task fails, its join handle reports "stack overflow", and the
//!   worker and every other task go on;
//! - inside a transaction (whose records would stay locked forever if its frames were
//!   abandoned), it prints which task overflowed and aborts the process;
//! - for any other fault, it hands over to the handler installed before it.
//!
//! What the abandoned frames owned is leaked (a task that overflows while holding a
//! lock leaves it held): a failure report, not a recovery for programs that go on
//! using that state. On other platforms an overflow hits the guard page and the
//! process gets the signal's default action.
//!
//! # Invariants
//! - `ARMED` is set only while the worker resumes a native task, to that task's trap
//!   handler; the signal handler reads it from the faulting thread only.

use std::cell::Cell;

/// What the signal handler needs to turn an overflow of the running task into its
/// failure.
#[derive(Clone, Copy)]
pub(crate) struct Armed {
    pub(crate) trap: corosensei::trap::CoroutineTrapHandler<()>,
    /// Called (in normal context, on the reset task stack) to fail the task.
    pub(crate) fail: *const (dyn Fn() + Send + Sync),
}

thread_local! {
    static ARMED: Cell<Option<Armed>> = const { Cell::new(None) };
}

/// Arms (or, with `None`, disarms) the overflow handler for the current thread.
#[inline(never)]
pub(crate) fn arm(armed: Option<Armed>) {
    ARMED.with(|slot| slot.set(armed));
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod imp {
    use super::{ARMED, Armed};
    use std::sync::Once;
    use std::sync::atomic::{AtomicPtr, Ordering};

    static PREVIOUS_SEGV: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());
    static PREVIOUS_BUS: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());

    /// Installs the handler (once per process).
    pub(crate) fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            for (signal, previous) in [
                (libc::SIGSEGV, &PREVIOUS_SEGV),
                (libc::SIGBUS, &PREVIOUS_BUS),
            ] {
                // SAFETY: a zeroed `sigaction` is a valid "no handler" value; we fill
                // in a handler with the `SA_SIGINFO` signature and keep the old one.
                unsafe {
                    let mut action: libc::sigaction = std::mem::zeroed();
                    action.sa_sigaction = on_fault as *const () as usize;
                    action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                    libc::sigemptyset(&mut action.sa_mask);
                    let old = Box::into_raw(Box::new(std::mem::zeroed::<libc::sigaction>()));
                    if libc::sigaction(signal, &action, old) == 0 {
                        // ORDERING: publishes the `sigaction` that `old` points to, which
                        // the kernel filled: pairs with the SeqCst load in `chain`, which
                        // reads through the pointer (Release and Acquire would do).
                        previous.store(old, Ordering::SeqCst);
                    }
                }
            }
        });
    }

    /// Gives the current thread an alternate signal stack if it has none (threads
    /// started by `std` usually have one).
    pub(crate) fn ensure_alternate_stack() {
        const SIZE: usize = 64 * 1024;
        // SAFETY: querying and setting the calling thread's alternate stack; the new
        // stack is leaked on purpose, as it must outlive the thread's signal handling.
        unsafe {
            let mut current: libc::stack_t = std::mem::zeroed();
            if libc::sigaltstack(std::ptr::null(), &mut current) != 0
                || current.ss_flags & libc::SS_DISABLE == 0
            {
                return;
            }
            let memory = Box::leak(vec![0u8; SIZE].into_boxed_slice());
            let stack = libc::stack_t {
                ss_sp: memory.as_mut_ptr().cast(),
                ss_flags: 0,
                ss_size: SIZE,
            };
            libc::sigaltstack(&stack, std::ptr::null_mut());
        }
    }

    extern "C" fn on_fault(
        signal: libc::c_int,
        info: *mut libc::siginfo_t,
        context: *mut libc::c_void,
    ) {
        let armed = ARMED.with(|slot| slot.get());
        // SAFETY: the kernel passes a valid `ucontext_t` to `SA_SIGINFO` handlers.
        let context = unsafe { &mut *(context as *mut libc::ucontext_t) };
        let stack_pointer = context.uc_mcontext.gregs[libc::REG_RSP as usize] as usize;
        match armed {
            Some(armed) if armed.trap.stack_ptr_in_bounds(stack_pointer) => recover(armed, context),
            _ => chain(signal, info, context),
        }
    }

    fn recover(armed: Armed, context: &mut libc::ucontext_t) {
        if lutra_stm::in_transaction() {
            let message = b"lutra: a task overflowed its stack inside a transaction; aborting\n";
            // SAFETY: `write` and `abort` are async-signal-safe.
            unsafe {
                libc::write(2, message.as_ptr().cast(), message.len());
                libc::abort();
            }
        }
        let fail = armed.fail;
        // SAFETY: the faulting stack pointer is inside the armed task's coroutine
        // (checked by the caller), which is alive (the worker is resuming it); the
        // registers are updated exactly as `setup_trap_handler` requires. `fail` points
        // into the task's `NativeTask`, alive until the coroutine returns.
        unsafe {
            let registers = armed.trap.setup_trap_handler(move || (*fail)());
            let gregs = &mut context.uc_mcontext.gregs;
            gregs[libc::REG_RIP as usize] = registers.rip as i64;
            gregs[libc::REG_RSP as usize] = registers.rsp as i64;
            gregs[libc::REG_RBP as usize] = registers.rbp as i64;
            gregs[libc::REG_RDI as usize] = registers.rdi as i64;
            gregs[libc::REG_RSI as usize] = registers.rsi as i64;
        }
    }

    /// Passes a fault that is not a task's overflow to the previous handler, or
    /// restores the default action so that the faulting instruction faults again.
    fn chain(signal: libc::c_int, info: *mut libc::siginfo_t, context: &mut libc::ucontext_t) {
        let previous = if signal == libc::SIGSEGV {
            &PREVIOUS_SEGV
        } else {
            &PREVIOUS_BUS
        };
        // ORDERING: pairs with the store in `install`: the `sigaction` it points to is
        // complete.
        let previous = previous.load(Ordering::SeqCst);
        // SAFETY: `previous` was filled by `sigaction` and is never freed; calling the
        // previous handler with the arguments we received is what it expects.
        unsafe {
            if previous.is_null() {
                libc::signal(signal, libc::SIG_DFL);
                return;
            }
            let handler = (*previous).sa_sigaction;
            if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
                libc::sigaction(signal, previous, std::ptr::null_mut());
            } else if (*previous).sa_flags & libc::SA_SIGINFO != 0 {
                let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(handler);
                handler(signal, info, (context as *mut libc::ucontext_t).cast());
            } else {
                let handler: extern "C" fn(libc::c_int) = std::mem::transmute(handler);
                handler(signal);
            }
        }
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
mod imp {
    pub(crate) fn install() {}
    pub(crate) fn ensure_alternate_stack() {}
}

pub(crate) use imp::{ensure_alternate_stack, install};
