//! Memory transfers and the undo log of the ABI.
//!
//! - `_ITM_memcpy<R><W>` and `_ITM_memmove<R><W>`: copy `size` bytes, reading the
//!   source transactionally (`Rt`, `RtaR`, `RtaW`) or plainly (`Rn`), and writing
//!   the destination transactionally (`Wt`, `WtaR`, `WtaW`) or plainly (`Wn`). The
//!   "after read / after write" suffixes are hints Lutra does not need.
//! - `_ITM_memset<W>`: fills `size` bytes of the destination transactionally.
//! - `_ITM_L<T>` and `_ITM_LB`: save the current bytes of a location that is not
//!   shared (a local variable of the transaction's function) so that a restart or a
//!   cancel puts them back (see `ItmFrame::undo_log`).
//!
//! Copies go through a buffer on the stack, a chunk at a time, forwards, or
//! backwards when a move's destination lies above an overlapping source, so that a
//! restart (which may happen at any chunk) jumps over no frame that owns anything.

use super::barriers::{read_bytes, write_bytes};
use super::library::fatal;
use super::thread_state::on_thread;
use std::ffi::c_int;

/// Bytes copied per chunk.
const CHUNK: usize = 256;

/// How one side of a transfer is accessed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// Through the transaction.
    Transactional,
    /// Directly: memory no other thread accesses meanwhile.
    Plain,
}

/// Copies `size` bytes from `src` to `dst`, chunk by chunk; `backwards` when the
/// ranges overlap with `dst` above `src`.
///
/// # Safety
/// The ranges are valid; transactional sides are accessed only by transactions
/// meanwhile; the callers' frames own nothing.
unsafe fn transfer(dst: usize, write: Side, src: usize, read: Side, size: usize) {
    let backwards = dst > src && dst < src.wrapping_add(size);
    let mut buffer = [0u8; CHUNK];
    let mut done = 0;
    while done < size {
        let len = CHUNK.min(size - done);
        let offset = if backwards { size - done - len } else { done };
        // SAFETY: within the caller's ranges; `buffer` has room for `len` bytes.
        unsafe {
            match read {
                Side::Transactional => read_bytes(src + offset, buffer.as_mut_ptr(), len),
                Side::Plain => std::ptr::copy_nonoverlapping(
                    (src + offset) as *const u8,
                    buffer.as_mut_ptr(),
                    len,
                ),
            }
            match write {
                Side::Transactional => write_bytes(dst + offset, buffer.as_ptr(), len),
                Side::Plain => {
                    std::ptr::copy_nonoverlapping(buffer.as_ptr(), (dst + offset) as *mut u8, len)
                }
            }
        }
        done += len;
    }
}

/// Defines copy functions: `name => (destination side, source side)`.
macro_rules! transfers {
    ($what:literal; $($name:ident => ($write:ident, $read:ident);)*) => {$(
        #[doc = concat!("libitm's `", stringify!($name), "`: ", $what, " of `size` bytes from ",
            "`src` to `dst` inside the calling thread's transaction (destination accessed ",
            stringify!($write), ", source ", stringify!($read), "); a conflict restarts it.")]
        ///
        /// # Safety
        /// Called by code that GCC compiled with `-fgnu-tm`, inside a transaction, with
        /// valid ranges.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(dst: *mut u8, src: *const u8, size: usize) {
            // SAFETY: the caller's contract.
            unsafe { transfer(dst as usize, Side::$write, src as usize, Side::$read, size) }
        }
    )*};
}

transfers! { "`memcpy`";
    _ITM_memcpyRnWt => (Transactional, Plain);
    _ITM_memcpyRnWtaR => (Transactional, Plain);
    _ITM_memcpyRnWtaW => (Transactional, Plain);
    _ITM_memcpyRtWn => (Plain, Transactional);
    _ITM_memcpyRtaRWn => (Plain, Transactional);
    _ITM_memcpyRtaWWn => (Plain, Transactional);
    _ITM_memcpyRtWt => (Transactional, Transactional);
    _ITM_memcpyRtWtaR => (Transactional, Transactional);
    _ITM_memcpyRtWtaW => (Transactional, Transactional);
    _ITM_memcpyRtaRWt => (Transactional, Transactional);
    _ITM_memcpyRtaRWtaR => (Transactional, Transactional);
    _ITM_memcpyRtaRWtaW => (Transactional, Transactional);
    _ITM_memcpyRtaWWt => (Transactional, Transactional);
    _ITM_memcpyRtaWWtaR => (Transactional, Transactional);
    _ITM_memcpyRtaWWtaW => (Transactional, Transactional);
}

transfers! { "`memmove`";
    _ITM_memmoveRnWt => (Transactional, Plain);
    _ITM_memmoveRnWtaR => (Transactional, Plain);
    _ITM_memmoveRnWtaW => (Transactional, Plain);
    _ITM_memmoveRtWn => (Plain, Transactional);
    _ITM_memmoveRtaRWn => (Plain, Transactional);
    _ITM_memmoveRtaWWn => (Plain, Transactional);
    _ITM_memmoveRtWt => (Transactional, Transactional);
    _ITM_memmoveRtWtaR => (Transactional, Transactional);
    _ITM_memmoveRtWtaW => (Transactional, Transactional);
    _ITM_memmoveRtaRWt => (Transactional, Transactional);
    _ITM_memmoveRtaRWtaR => (Transactional, Transactional);
    _ITM_memmoveRtaRWtaW => (Transactional, Transactional);
    _ITM_memmoveRtaWWt => (Transactional, Transactional);
    _ITM_memmoveRtaWWtaR => (Transactional, Transactional);
    _ITM_memmoveRtaWWtaW => (Transactional, Transactional);
}

/// Fills `size` bytes at `dst` with the byte `value`, transactionally.
///
/// # Safety
/// As [`transfer`].
unsafe fn fill(dst: usize, value: c_int, size: usize) {
    let buffer = [value as u8; CHUNK];
    let mut done = 0;
    while done < size {
        let len = CHUNK.min(size - done);
        // SAFETY: within the caller's range; `buffer` holds `len` bytes.
        unsafe { write_bytes(dst + done, buffer.as_ptr(), len) };
        done += len;
    }
}

macro_rules! fills {
    ($($name:ident)*) => {$(
        #[doc = concat!("libitm's `", stringify!($name), "`: `memset` of `size` bytes at `dst` ",
            "to the byte `value`, inside the calling thread's transaction; a conflict ",
            "restarts it.")]
        ///
        /// # Safety
        /// Called by code that GCC compiled with `-fgnu-tm`, inside a transaction, with
        /// a valid range.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(dst: *mut u8, value: c_int, size: usize) {
            // SAFETY: the caller's contract.
            unsafe { fill(dst as usize, value, size) }
        }
    )*};
}

fills!(_ITM_memsetW _ITM_memsetWaR _ITM_memsetWaW);

/// Saves the `size` bytes at `addr` in the running transaction's undo log.
///
/// # Safety
/// `addr` is readable for `size` bytes, and stays valid (and owned by the caller's
/// frame or thread) until the transaction ends.
unsafe fn log(function: &str, addr: usize, size: usize) {
    // SAFETY: the caller's contract.
    let old: Box<[u8]> = unsafe { std::slice::from_raw_parts(addr as *const u8, size) }.into();
    on_thread(function, |state| {
        if state.nesting == 0 {
            fatal(function, "no transaction is running");
        }
        state.itm.undo_log.push((addr, old));
    });
}

/// libitm's `_ITM_LB`: saves the `size` bytes at `addr` (memory of the calling
/// thread, not shared) so that a restart or a cancel of the running transaction
/// puts them back. Outside a transaction it stops the process.
///
/// # Safety
/// Called by code that GCC compiled with `-fgnu-tm`; `addr` stays valid until the
/// transaction ends.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ITM_LB(addr: *const u8, size: usize) {
    // SAFETY: the caller's contract.
    unsafe { log("_ITM_LB", addr as usize, size) }
}

macro_rules! logs {
    ($($name:ident => $size:literal;)*) => {$(
        #[doc = concat!("libitm's `", stringify!($name), "`: as `_ITM_LB` for the ", $size,
            " bytes at `addr`.")]
        ///
        /// # Safety
        /// As `_ITM_LB`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(addr: *const u8) {
            // SAFETY: the caller's contract.
            unsafe { log(stringify!($name), addr as usize, $size) }
        }
    )*};
}

logs! {
    _ITM_LU1 => 1;
    _ITM_LU2 => 2;
    _ITM_LU4 => 4;
    _ITM_LU8 => 8;
    _ITM_LF => 4;
    _ITM_LD => 8;
    _ITM_LE => 16;
    _ITM_LM64 => 8;
    _ITM_LM128 => 16;
    _ITM_LM256 => 32;
    _ITM_LCF => 8;
    _ITM_LCD => 16;
    _ITM_LCE => 32;
}
