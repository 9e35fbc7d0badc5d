//! x86 RTM (restricted transactional memory): speculative transactions in hardware,
//! as TLE and seed 000 use zEC12's TBEGIN/TEND.
//!
//! Detected at run time (`is_x86_feature_detected!("rtm")`); the instructions are
//! issued through inline assembly (the `_xbegin` intrinsics are unstable), compiled on
//! every x86-64 build and reached only when the processor has RTM. On other
//! architectures [`available`] is false and the entry points are unreachable.
//!
//! # Protocol (one attempt)
//! 1. `xbegin`. Inside: load the lock word (it joins the read set: taking the lock
//!    aborts the transaction); abort with code `LOCK_HELD` if it is held.
//! 2. Run the steps; reads and writes of `TVar` words are plain atomic accesses,
//!    tracked by the hardware. A need for the lock (or a boxed write) aborts with code
//!    `NEED_LOCK`.
//! 3. `xend` commits.
//! 4. On abort, execution resumes after `xbegin` with the status in `eax`; classify it:
//!    the lock held (now, or the `LOCK_HELD` code) first, then capacity, `NEED_LOCK`
//!    and statuses without the retry bit (interrupts, restricted instructions) are
//!    persistent, the rest (conflicts) transient.
//!
//! # Abort status (`eax` after an abort)
//! | bit | meaning |
//! |-----|---------|
//! | 0 | `xabort` was executed; bits 31-24 hold its code |
//! | 1 | the transaction may succeed on a retry |
//! | 2 | a memory conflict |
//! | 3 | a buffer overflowed (capacity) |

use crate::global::backend::{Aborted, Attempt, Body, Speculation};
use crate::global::policy::AbortClass;
use crate::global::section::Section;
use lutra_stm::{TVar, Transactable};
use std::sync::atomic::{AtomicUsize, Ordering};

/// `xabort` code: the lock was held when the transaction began.
const LOCK_HELD: u32 = 0x01;
/// `xabort` code: the transaction needs the lock.
const NEED_LOCK: u32 = 0x02;
/// `xabort` code: a transient abort requested by the program.
const TRANSIENT: u32 = 0x03;

const EXPLICIT: u32 = 1 << 0;
const RETRY: u32 = 1 << 1;
const CAPACITY: u32 = 1 << 3;

/// Whether the processor has RTM.
pub(crate) fn available() -> bool {
    hw::available()
}

/// Hardware speculation.
pub(crate) struct RtmSpeculation;

impl Speculation for RtmSpeculation {
    fn name(&self) -> &'static str {
        "rtm"
    }

    fn speculate(&self, attempt: Attempt<'_>, body: &mut Body<'_>) -> Result<(), Aborted> {
        let lock = attempt.lock;
        // SAFETY: this backend exists only when `available()` (see `Backend::rtm`).
        let status = unsafe { hw::begin() };
        if status == hw::STARTED {
            if lock.is_held() {
                abort(AbortClass::LockHeld);
            }
            let mut section = Section::hardware(lock, self, attempt.site);
            if body(&mut section).is_err() {
                abort(AbortClass::Transient);
            }
            // SAFETY: inside the transaction begun above.
            unsafe { hw::end() };
            return Ok(());
        }
        Err(Aborted {
            class: classify(status, lock.is_held()),
            reason: None,
        })
    }
}

/// The class of an abort with `status` (protocol step 4).
fn classify(status: u32, lock_held: bool) -> AbortClass {
    let code = status >> 24;
    if lock_held || (status & EXPLICIT != 0 && code == LOCK_HELD) {
        AbortClass::LockHeld
    } else if status & CAPACITY != 0
        || (status & EXPLICIT != 0 && code == NEED_LOCK)
        || (status & (EXPLICIT | RETRY) == 0)
    {
        AbortClass::Persistent
    } else {
        AbortClass::Transient
    }
}

/// Aborts the running hardware transaction with the code for `class`.
pub(crate) fn abort(class: AbortClass) -> ! {
    match class {
        AbortClass::LockHeld => hw::abort::<LOCK_HELD>(),
        AbortClass::Persistent => hw::abort::<NEED_LOCK>(),
        AbortClass::Transient => hw::abort::<TRANSIENT>(),
    }
}

fn word_of<T: Transactable>(var: &TVar<T>) -> &AtomicUsize {
    // SAFETY: a `TVar`'s word is an `AtomicUsize` (`as_word_ptr` points at it), aligned
    // and alive as long as `var` is borrowed.
    unsafe { AtomicUsize::from_ptr(var.as_word_ptr().cast_mut()) }
}

/// Reads `var` inside a hardware transaction.
pub(crate) fn read_direct<T: Transactable>(var: &TVar<T>) -> T {
    let word = word_of(var).load(Ordering::Relaxed);
    // SAFETY: the word holds a live value (the `TVar` invariant). A boxed value cannot
    // be freed under us: boxes are replaced only by the fallback, which holds the lock
    // (taking it aborted this transaction, and no transaction starts while it is held),
    // and `Backend::rtm`'s contract keeps other writers away.
    unsafe { T::clone_from_word(word) }
}

/// Writes an inline (not boxed) `value` to `var` inside a hardware transaction.
pub(crate) fn write_direct<T: Transactable>(var: &TVar<T>, value: T) {
    debug_assert!(!T::BOXED, "boxed values are written under the lock");
    word_of(var).store(value.into_word(), Ordering::Relaxed);
}

#[cfg(target_arch = "x86_64")]
mod hw {
    use std::arch::asm;

    /// `eax` when `xbegin` starts a transaction.
    pub(super) const STARTED: u32 = u32::MAX;

    pub(super) fn available() -> bool {
        std::is_x86_feature_detected!("rtm")
    }

    /// Begins a transaction: returns [`STARTED`], or, after an abort, its status.
    ///
    /// # Safety
    /// The processor must have RTM.
    #[inline(always)]
    pub(super) unsafe fn begin() -> u32 {
        let status: u32;
        // SAFETY: RTM is present (caller). On abort the processor restores every
        // register and discards every memory write since `xbegin`, then resumes at the
        // label with the status in eax: the block returns a second time, in exactly
        // the state of the first, with another eax.
        unsafe {
            asm!("mov eax, 0xFFFFFFFF", "xbegin 2f", "2:", out("eax") status, options(nostack));
        }
        status
    }

    /// Commits the running transaction.
    ///
    /// # Safety
    /// A transaction must be running (`xend` outside one faults).
    #[inline(always)]
    pub(super) unsafe fn end() {
        // SAFETY: guaranteed by the caller.
        unsafe { asm!("xend", options(nostack)) };
    }

    /// Aborts the running transaction with `CODE`.
    #[inline(always)]
    pub(super) fn abort<const CODE: u32>() -> ! {
        // SAFETY: called only inside a transaction (a section in hardware mode), where
        // `xabort` jumps back to `begin`; it never returns.
        unsafe { asm!("xabort {code}", code = const CODE, options(nostack, noreturn)) }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod hw {
    pub(super) const STARTED: u32 = u32::MAX;

    pub(super) fn available() -> bool {
        false
    }

    pub(super) unsafe fn begin() -> u32 {
        unreachable!("no RTM on this architecture")
    }

    pub(super) unsafe fn end() {
        unreachable!("no RTM on this architecture")
    }

    pub(super) fn abort<const CODE: u32>() -> ! {
        unreachable!("no RTM on this architecture")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_of_statuses() {
        let explicit = |code: u32| EXPLICIT | (code << 24);
        assert_eq!(classify(explicit(LOCK_HELD), false), AbortClass::LockHeld);
        assert_eq!(classify(RETRY | 1 << 2, true), AbortClass::LockHeld);
        assert_eq!(classify(explicit(NEED_LOCK), false), AbortClass::Persistent);
        assert_eq!(classify(CAPACITY, false), AbortClass::Persistent);
        assert_eq!(classify(0, false), AbortClass::Persistent);
        assert_eq!(classify(RETRY | 1 << 2, false), AbortClass::Transient);
        assert_eq!(classify(explicit(TRANSIENT), false), AbortClass::Transient);
    }

    #[test]
    fn unavailable_here_means_no_backend() {
        // SAFETY: nothing is accessed.
        let backend = unsafe { crate::global::Backend::rtm() };
        assert_eq!(backend.is_some(), available());
    }
}
