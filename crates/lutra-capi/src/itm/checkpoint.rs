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
//! - The assembly addresses each saved register at the offset named in `at`, and a
//!   const assertion checks each against `offset_of!` on [`Checkpoint`]: a change of
//!   the struct's layout that the assembly does not follow fails the build.
//! - `resume` is only used while the checkpoint's frame (the caller of
//!   `_ITM_beginTransaction`) is live, and only frames that own nothing lie above it
//!   (see `mod.rs`): it unwinds nothing.
//! - No shadow-stack (CET) support: programs built with `-fcf-protection=return`
//!   and run with shadow stacks enabled are not supported (GCC 12 on Debian does
//!   not enable them).

/// Saved registers of `_ITM_beginTransaction`'s caller (layout shared with the
/// assembly below: 8 words, at the offsets of [`at`], checked at compile time).
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

/// Where the assembly of [`_ITM_beginTransaction`] and [`resume`] finds each saved
/// register: the byte offset of each field, checked against the struct's layout at
/// compile time (below), so that a change to one without the other fails the build.
mod at {
    pub(super) const RBX: usize = 0;
    pub(super) const RBP: usize = 8;
    pub(super) const R12: usize = 16;
    pub(super) const R13: usize = 24;
    pub(super) const R14: usize = 32;
    pub(super) const R15: usize = 40;
    pub(super) const RSP: usize = 48;
    pub(super) const RIP: usize = 56;
    /// Bytes `_ITM_beginTransaction` reserves on its stack for the checkpoint: the
    /// checkpoint's size, plus 8 so that the stack is 16-byte aligned at its call
    /// (at entry `rsp` ≡ 8 mod 16, the return address just pushed).
    pub(super) const FRAME: usize = 72;
}

const _: () = {
    use std::mem::{align_of, offset_of, size_of};
    assert!(offset_of!(Checkpoint, rbx) == at::RBX);
    assert!(offset_of!(Checkpoint, rbp) == at::RBP);
    assert!(offset_of!(Checkpoint, r12) == at::R12);
    assert!(offset_of!(Checkpoint, r13) == at::R13);
    assert!(offset_of!(Checkpoint, r14) == at::R14);
    assert!(offset_of!(Checkpoint, r15) == at::R15);
    assert!(offset_of!(Checkpoint, rsp) == at::RSP);
    assert!(offset_of!(Checkpoint, rip) == at::RIP);
    assert!(size_of::<Checkpoint>() == at::RIP + 8);
    assert!(align_of::<Checkpoint>() <= 8);
    // The frame holds the checkpoint and realigns the stack for the call.
    assert!(at::FRAME >= size_of::<Checkpoint>());
    assert!((at::FRAME + 8).is_multiple_of(16));
};

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
    // At entry rsp points at the return address (rsp ≡ 8 mod 16). `at::FRAME` bytes
    // hold the 8-word checkpoint and realign the stack for the call.
    core::arch::naked_asm!(
        "lea rax, [rsp + 8]",
        "sub rsp, {frame}",
        "mov [rsp + {rbx}], rbx",
        "mov [rsp + {rbp}], rbp",
        "mov [rsp + {r12}], r12",
        "mov [rsp + {r13}], r13",
        "mov [rsp + {r14}], r14",
        "mov [rsp + {r15}], r15",
        "mov [rsp + {rsp}], rax",
        "mov rax, [rsp + {frame}]",
        "mov [rsp + {rip}], rax",
        "mov rsi, rsp",
        "call {begin}",
        "add rsp, {frame}",
        "ret",
        frame = const at::FRAME,
        rbx = const at::RBX,
        rbp = const at::RBP,
        r12 = const at::R12,
        r13 = const at::R13,
        r14 = const at::R14,
        r15 = const at::R15,
        rsp = const at::RSP,
        rip = const at::RIP,
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
        "mov rbx, [rdi + {rbx}]",
        "mov rbp, [rdi + {rbp}]",
        "mov r12, [rdi + {r12}]",
        "mov r13, [rdi + {r13}]",
        "mov r14, [rdi + {r14}]",
        "mov r15, [rdi + {r15}]",
        "mov rsp, [rdi + {rsp}]",
        "jmp qword ptr [rdi + {rip}]",
        rbx = const at::RBX,
        rbp = const at::RBP,
        r12 = const at::R12,
        r13 = const at::R13,
        r14 = const at::R14,
        r15 = const at::R15,
        rsp = const at::RSP,
        rip = const at::RIP,
    )
}
