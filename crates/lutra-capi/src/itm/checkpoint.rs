//! The register checkpoint behind `_ITM_beginTransaction`'s "returns twice" contract
//! (x86-64, System V).
//!
//! GCC calls `_ITM_beginTransaction` as a `returns_twice` function: it keeps nothing
//! in caller-saved registers across the call, and expects the call to return again,
//! with new action bits, whenever the transaction restarts or is cancelled. So the
//! checkpoint holds exactly what a return needs: the callee-saved registers (`rbx`,
//! `rbp`, `r12`–`r15`), the stack pointer the caller has after the return, and the
//! return address. [`_ITM_beginTransaction`] saves them on its own stack and passes
//! them to `transaction::begin`, which copies them into the thread's state for an
//! outermost transaction; `resume` loads them back and jumps to the return
//! address, as if the call had just returned with `eax` = the actions.
//!
//! # Invariants
//! - `resume` is only used while the checkpoint's frame (the caller of
//!   `_ITM_beginTransaction`) is live, and only frames that own nothing lie above it
//!   (see `mod.rs`): it unwinds nothing.
//! - No shadow-stack (CET) support: programs built with `-fcf-protection=return`
//!   and run with shadow stacks enabled are not supported (GCC 12 on Debian does
//!   not enable them).

/// Saved registers of `_ITM_beginTransaction`'s caller (layout shared with the
/// assembly below: 8 words).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Checkpoint {
    rbx: usize,
    rbp: usize,
    r12: usize,
    r13: usize,
    r14: usize,
    r15: usize,
    /// The caller's stack pointer once the call has returned.
    rsp: usize,
    /// The return address.
    rip: usize,
}

impl Checkpoint {
    /// The caller's stack pointer once `_ITM_beginTransaction` has returned: inside
    /// the frame of the transaction's caller.
    pub(crate) fn stack_pointer(&self) -> usize {
        self.rsp
    }
}

/// libitm's `_ITM_beginTransaction(uint32_t properties, ...)`: begins (or, nested,
/// joins) a transaction on the calling thread and returns the `_ITM_actions` to
/// take: run the instrumented (or uninstrumented) path, save live variables. Returns
/// again, with `a_restoreLiveVariables` and the path to run, each time the
/// transaction restarts, and with `a_abortTransaction` when it is cancelled.
///
/// The first transaction of a thread registers it (and starts the engine, configured
/// as `stm_init` is, if nothing started it); a bad configuration stops the process
/// with a message, as `stm_init` does.
///
/// # Safety
/// Called by code that GCC compiled with `-fgnu-tm`, which treats it as
/// `returns_twice` (the variadic arguments of the ABI are never read).
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ITM_beginTransaction(properties: u32) -> u32 {
    // At entry rsp points at the return address (rsp ≡ 8 mod 16). 72 bytes hold the
    // 8-word checkpoint and realign the stack for the call.
    core::arch::naked_asm!(
        "lea rax, [rsp + 8]",
        "sub rsp, 72",
        "mov [rsp], rbx",
        "mov [rsp + 8], rbp",
        "mov [rsp + 16], r12",
        "mov [rsp + 24], r13",
        "mov [rsp + 32], r14",
        "mov [rsp + 40], r15",
        "mov [rsp + 48], rax",
        "mov rax, [rsp + 72]",
        "mov [rsp + 56], rax",
        "mov rsi, rsp",
        "call {begin}",
        "add rsp, 72",
        "ret",
        begin = sym super::transaction::begin,
    )
}

/// Makes `_ITM_beginTransaction` return `actions` again, from the frame saved in
/// `checkpoint`.
///
/// # Safety
/// See the module invariants: the checkpoint's frame is live and nothing above it
/// owns anything.
#[unsafe(naked)]
pub(crate) unsafe extern "C" fn resume(checkpoint: *const Checkpoint, actions: u32) -> ! {
    core::arch::naked_asm!(
        "mov eax, esi",
        "mov rbx, [rdi]",
        "mov rbp, [rdi + 8]",
        "mov r12, [rdi + 16]",
        "mov r13, [rdi + 24]",
        "mov r14, [rdi + 32]",
        "mov r15, [rdi + 40]",
        "mov rsp, [rdi + 48]",
        "jmp qword ptr [rdi + 56]",
    )
}
