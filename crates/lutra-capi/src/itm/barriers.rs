//! The read and write barriers of the ABI: `_ITM_R<T>`, `_ITM_RaR<T>`, `_ITM_RaW<T>`,
//! `_ITM_RfW<T>`, `_ITM_W<T>`, `_ITM_WaR<T>`, `_ITM_WaW<T>` for every type `T` GCC
//! emits: `U1`, `U2`, `U4`, `U8`, `F`, `D`, `E` (long double), `M64`, `M128`, `M256`
//! (vectors), `CF`, `CD`, `CE` (complex).
//!
//! Each reads or writes the value in the calling thread's transaction; a conflict
//! restarts it (the call does not return). The variants ("after read", "after
//! write", "for write") are hints that Lutra's engine does not need: each behaves as
//! the plain barrier of its type.
//!
//! Every barrier takes the sub-word path of `subword.rs`, shared with `stm.h`'s
//! typed accessors: a value lying within one aligned word is read through the
//! thread's read front as `stm_load` reads (or written as one masked word);
//! anything else (wider values, values crossing a word, tasks of the scheduler)
//! reads or writes its byte range through the C ABI's general path (`read_bytes`,
//! `write_bytes`). `long double`
//! values, which travel in x87 registers or on the stack, go through small assembly
//! trampolines around the same functions.
//!
//! # Invariants
//! - As every access of the C ABI: only whole aligned words reach the engine, and a
//!   restart resumes from frames that own nothing.

#![allow(
    improper_ctypes_definitions,
    reason = "`__m128` and `__m256` are C's vector types: passed in SSE / AVX registers as GCC passes them"
)]

use super::library::fatal;
use crate::access;
use crate::attempt::Style;
use crate::boundary;
use crate::shim;
use crate::subword;
use std::arch::x86_64::{__m128, __m256};
use std::mem::{MaybeUninit, size_of};

/// `_Complex float`: two floats in one SSE eightbyte, as the C ABI passes it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ComplexFloat {
    re: f32,
    im: f32,
}

/// `_Complex double`: two doubles in two SSE registers, as the C ABI passes it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ComplexDouble {
    re: f64,
    im: f64,
}

/// `__m64` travels in an SSE register, as a `double` does: its bits are carried in
/// an `f64`.
type M64 = f64;

/// Reads the `T` at `addr` in the calling thread's transaction, by the one
/// sub-word path (`subword.rs`); values it leaves go through [`read_bytes`].
///
/// # Safety
/// `addr` is valid for reads of a `T` and accessed only by transactions meanwhile;
/// every bit pattern of `T` is a value; the callers' frames own nothing.
#[inline(always)]
unsafe fn load<T: Copy>(addr: *const T) -> T {
    let general = move || {
        // SAFETY: forwarded contract.
        unsafe { load_slow(addr) }
    };
    // SAFETY: forwarded contract.
    unsafe { subword::load(addr as usize, general) }
}

#[cold]
#[inline(never)]
unsafe fn load_slow<T: Copy>(addr: *const T) -> T {
    let mut value = MaybeUninit::<T>::zeroed();
    // SAFETY: forwarded contract; `value` has room for `size_of::<T>()` bytes.
    unsafe { read_bytes(addr as usize, value.as_mut_ptr().cast(), size_of::<T>()) };
    // SAFETY: every byte was written (or zeroed); every bit pattern is a value.
    unsafe { value.assume_init() }
}

/// Writes `value` to `addr` in the calling thread's transaction, by the one
/// sub-word path (`subword.rs`); values it leaves go through [`write_bytes`].
///
/// # Safety
/// As [`load`], for writes.
#[inline(always)]
unsafe fn store<T: Copy>(addr: *mut T, value: T) {
    // SAFETY: forwarded contract; GCC's code passes no NULL address (it would
    // dereference it on its uninstrumented path).
    if !unsafe { subword::store(addr as usize, value, subword::Null::NotPassed) } {
        // SAFETY: forwarded contract.
        unsafe { store_slow(addr, value) }
    }
}

#[cold]
#[inline(never)]
unsafe fn store_slow<T: Copy>(addr: *mut T, value: T) {
    // SAFETY: forwarded contract; `value` is `size_of::<T>()` readable bytes.
    unsafe { write_bytes(addr as usize, (&raw const value).cast(), size_of::<T>()) };
}

/// Reads `len` bytes at `addr` into `out`, in the calling thread's transaction, by
/// the C ABI's general path; a conflict restarts the transaction (no return).
///
/// # Safety
/// `addr` is valid for reads of `len` bytes, accessed only by transactions
/// meanwhile; `out` is writable for `len` bytes; the callers' frames own nothing.
pub(super) unsafe extern "C" fn read_bytes(addr: usize, out: *mut u8, len: usize) {
    // SAFETY: the caller's contract.
    let out = unsafe { std::slice::from_raw_parts_mut(out, len) };
    let status = boundary::status("_ITM_R", || {
        access::load("_ITM_R", addr, out, Style::Restart)
    });
    // SAFETY: this frame owns only integers (the caller's contract for the rest).
    unsafe { shim::jump_if_restarted(status) };
    if status < 0 {
        misuse_slow("a transactional read");
    }
}

/// Writes the `len` bytes at `src` to `addr`, in the calling thread's transaction,
/// by the C ABI's general path; a conflict restarts the transaction (no return).
///
/// # Safety
/// As [`read_bytes`], `addr` valid for writes and `src` readable for `len` bytes.
pub(super) unsafe extern "C" fn write_bytes(addr: usize, src: *const u8, len: usize) {
    // SAFETY: the caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts(src, len) };
    let status = boundary::status("_ITM_W", || {
        access::store("_ITM_W", addr, len, |i| bytes[i], Style::Restart)
    });
    // SAFETY: as in `read_bytes`.
    unsafe { shim::jump_if_restarted(status) };
    if status < 0 {
        misuse_slow("a transactional write");
    }
}

#[cold]
#[inline(never)]
fn misuse_slow(what: &str) -> ! {
    // SAFETY: `lutra_last_error` returns a NUL-terminated string, valid until the
    // thread's next error.
    let reason = unsafe { std::ffi::CStr::from_ptr(crate::last_error::lutra_last_error()) };
    fatal(
        "_ITM barrier",
        &format!("{what} failed: {}", reason.to_string_lossy()),
    )
}

/// Defines the seven barriers of a type passed in registers.
macro_rules! barriers {
    ($($ty:ty => $r:ident $rar:ident $raw:ident $rfw:ident / $w:ident $war:ident $waw:ident;)*) => {$(
        barriers!(@read $ty, $r, $rar, $raw, $rfw);
        barriers!(@write $ty, $w, $war, $waw);
    )*};
    (@read $ty:ty, $($name:ident),*) => {$(
        #[doc = concat!("libitm's `", stringify!($name), "`: reads the `", stringify!($ty),
            "` at `addr` in the calling thread's transaction (a conflict restarts it).")]
        ///
        /// # Safety
        /// Called by code that GCC compiled with `-fgnu-tm`, inside a transaction, for a
        /// valid address.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(addr: *const $ty) -> $ty {
            // SAFETY: the caller's contract.
            unsafe { load(addr) }
        }
    )*};
    (@write $ty:ty, $($name:ident),*) => {$(
        #[doc = concat!("libitm's `", stringify!($name), "`: writes the `", stringify!($ty),
            "` `value` at `addr` in the calling thread's transaction (a conflict restarts it).")]
        ///
        /// # Safety
        /// Called by code that GCC compiled with `-fgnu-tm`, inside a transaction, for a
        /// valid address.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(addr: *mut $ty, value: $ty) {
            // SAFETY: the caller's contract.
            unsafe { store(addr, value) }
        }
    )*};
}

barriers! {
    u8 => _ITM_RU1 _ITM_RaRU1 _ITM_RaWU1 _ITM_RfWU1 / _ITM_WU1 _ITM_WaRU1 _ITM_WaWU1;
    u16 => _ITM_RU2 _ITM_RaRU2 _ITM_RaWU2 _ITM_RfWU2 / _ITM_WU2 _ITM_WaRU2 _ITM_WaWU2;
    u32 => _ITM_RU4 _ITM_RaRU4 _ITM_RaWU4 _ITM_RfWU4 / _ITM_WU4 _ITM_WaRU4 _ITM_WaWU4;
    u64 => _ITM_RU8 _ITM_RaRU8 _ITM_RaWU8 _ITM_RfWU8 / _ITM_WU8 _ITM_WaRU8 _ITM_WaWU8;
    f32 => _ITM_RF _ITM_RaRF _ITM_RaWF _ITM_RfWF / _ITM_WF _ITM_WaRF _ITM_WaWF;
    f64 => _ITM_RD _ITM_RaRD _ITM_RaWD _ITM_RfWD / _ITM_WD _ITM_WaRD _ITM_WaWD;
    M64 => _ITM_RM64 _ITM_RaRM64 _ITM_RaWM64 _ITM_RfWM64 / _ITM_WM64 _ITM_WaRM64 _ITM_WaWM64;
    __m128 => _ITM_RM128 _ITM_RaRM128 _ITM_RaWM128 _ITM_RfWM128
        / _ITM_WM128 _ITM_WaRM128 _ITM_WaWM128;
    ComplexFloat => _ITM_RCF _ITM_RaRCF _ITM_RaWCF _ITM_RfWCF / _ITM_WCF _ITM_WaRCF _ITM_WaWCF;
    ComplexDouble => _ITM_RCD _ITM_RaRCD _ITM_RaWCD _ITM_RfWCD / _ITM_WCD _ITM_WaRCD _ITM_WaWCD;
}

/// Defines the seven barriers of `__m256`, which travels in AVX registers: only
/// code built for AVX calls them, so they are compiled for it.
macro_rules! avx_barriers {
    (@read $($name:ident),*) => {$(
        #[doc = concat!("libitm's `", stringify!($name), "`: reads the `__m256` at `addr` ",
            "in the calling thread's transaction (a conflict restarts it).")]
        ///
        /// # Safety
        /// Called by code that GCC compiled with `-fgnu-tm -mavx`, inside a
        /// transaction, for a valid address.
        #[unsafe(no_mangle)]
        #[target_feature(enable = "avx")]
        pub unsafe extern "C" fn $name(addr: *const __m256) -> __m256 {
            // SAFETY: the caller's contract.
            unsafe { load(addr) }
        }
    )*};
    (@write $($name:ident),*) => {$(
        #[doc = concat!("libitm's `", stringify!($name), "`: writes the `__m256` `value` ",
            "at `addr` in the calling thread's transaction (a conflict restarts it).")]
        ///
        /// # Safety
        /// Called by code that GCC compiled with `-fgnu-tm -mavx`, inside a
        /// transaction, for a valid address.
        #[unsafe(no_mangle)]
        #[target_feature(enable = "avx")]
        pub unsafe extern "C" fn $name(addr: *mut __m256, value: __m256) {
            // SAFETY: the caller's contract.
            unsafe { store(addr, value) }
        }
    )*};
}

avx_barriers!(@read _ITM_RM256, _ITM_RaRM256, _ITM_RaWM256, _ITM_RfWM256);
avx_barriers!(@write _ITM_WM256, _ITM_WaRM256, _ITM_WaWM256);

/// Defines the barriers of `long double` (`E`, 16 bytes, returned in `st(0)`) and
/// `_Complex long double` (`CE`, 32 bytes, returned in `st(0)` and `st(1)`); both are
/// passed on the stack. Readers load the bytes into a stack buffer through
/// [`read_bytes`] and push them on the x87 stack; writers hand the argument's stack
/// slot to [`write_bytes`].
macro_rules! x87_barriers {
    ($bytes:literal, $frame:literal, $push:literal; $($r:ident)* / $($w:ident)*) => {
        $(
            #[doc = concat!("libitm's `", stringify!($r), "`: reads the ", $bytes,
                "-byte x87 value at `addr` in the calling thread's transaction (a conflict ",
                "restarts it); the value is returned on the x87 stack.")]
            ///
            /// # Safety
            /// Called by code that GCC compiled with `-fgnu-tm`, inside a transaction, for
            /// a valid address.
            #[unsafe(naked)]
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $r(addr: *const u8) {
                core::arch::naked_asm!(
                    concat!("sub rsp, ", $frame),
                    "mov rsi, rsp",
                    concat!("mov edx, ", $bytes),
                    "call {read}",
                    $push,
                    concat!("add rsp, ", $frame),
                    "ret",
                    read = sym read_bytes,
                )
            }
        )*
        $(
            #[doc = concat!("libitm's `", stringify!($w), "`: writes the ", $bytes,
                "-byte x87 value passed on the stack to `addr` in the calling thread's ",
                "transaction (a conflict restarts it).")]
            ///
            /// # Safety
            /// Called by code that GCC compiled with `-fgnu-tm`, inside a transaction, for
            /// a valid address.
            #[unsafe(naked)]
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $w(addr: *mut u8) {
                core::arch::naked_asm!(
                    "lea rsi, [rsp + 8]",
                    concat!("mov edx, ", $bytes),
                    "jmp {write}",
                    write = sym write_bytes,
                )
            }
        )*
    };
}

x87_barriers!("16", "24", "fld tbyte ptr [rsp]";
    _ITM_RE _ITM_RaRE _ITM_RaWE _ITM_RfWE / _ITM_WE _ITM_WaRE _ITM_WaWE);
x87_barriers!("32", "40", "fld tbyte ptr [rsp + 16]\nfld tbyte ptr [rsp]";
    _ITM_RCE _ITM_RaRCE _ITM_RaWCE _ITM_RfWCE / _ITM_WCE _ITM_WaRCE _ITM_WaWCE);
