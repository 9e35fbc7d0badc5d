//! tinySTM's `wrappers.h`: transactional loads and stores of C's basic types and of
//! byte ranges, on top of the byte-range core of `access.rs`.
//!
//! An access whose bytes lie in one aligned word takes the sub-word path of
//! `subword.rs` (shared with libitm's barriers), which reads through the read front
//! as `stm_load` does. Every function here may
//! abort like `stm_load`: on a conflict the transaction
//! restarts from its `sigsetjmp` and the call does not return. Misuse (no registered
//! thread, no transaction, NULL address) makes a load return 0 and a store write
//! nothing, and sets the thread's last error. Addresses need no alignment.
//!
//! # Safety (every function)
//! Addresses must be NULL or valid for the access, and the locations only written by
//! transactions while transactions may access them (this includes the other bytes of
//! every machine word they share). The caller's frames up to the `sigsetjmp` must be
//! C frames (or frames that own nothing).

use crate::access::{self, WORD};
use crate::attempt::Style;
use crate::boundary;
use crate::shim;
use crate::subword;
use std::ffi::{
    c_char, c_double, c_float, c_int, c_long, c_short, c_uchar, c_uint, c_ulong, c_ushort, c_void,
};

/// Loads `N` bytes at `addr` (the body of every typed load) by the one sub-word
/// path (`subword.rs`); `function` names the caller for error messages.
///
/// # Safety
/// As the module's; the frame calling this must own nothing (it may be jumped over).
#[inline(always)]
unsafe fn load_bytes<const N: usize>(function: &'static str, addr: usize) -> [u8; N] {
    let general = move || {
        // SAFETY: forwarded contract.
        unsafe { load_bytes_slow(function, addr) }
    };
    // SAFETY: forwarded contract; every bit pattern is a byte array.
    unsafe { subword::load(addr, general) }
}

/// The general path of [`load_bytes`].
///
/// # Safety
/// As [`load_bytes`].
#[cold]
#[inline(never)]
unsafe fn load_bytes_slow<const N: usize>(function: &'static str, addr: usize) -> [u8; N] {
    let mut bytes = [0u8; N];
    let status = boundary::status(function, || {
        access::load(function, addr, &mut bytes, Style::Restart)
    });
    // SAFETY: the caller's frame and this one hold only integers (contract).
    unsafe { shim::jump_if_restarted(status) };
    bytes
}

/// Stores `bytes` at `addr` (the body of every typed store) by the one sub-word
/// path (`subword.rs`).
///
/// # Safety
/// As [`load_bytes`].
#[inline(always)]
unsafe fn store_bytes<const N: usize>(function: &'static str, addr: usize, bytes: [u8; N]) {
    // SAFETY: forwarded contract.
    if !unsafe { subword::store(addr, bytes, subword::Null::Reported) } {
        // SAFETY: forwarded contract.
        unsafe { store_bytes_slow(function, addr, bytes) }
    }
}

/// The general path of [`store_bytes`].
///
/// # Safety
/// As [`load_bytes`].
#[cold]
#[inline(never)]
unsafe fn store_bytes_slow<const N: usize>(function: &'static str, addr: usize, bytes: [u8; N]) {
    let status = boundary::status(function, || {
        access::store(function, addr, N, |i| bytes[i], Style::Restart)
    });
    // SAFETY: as in `load_bytes`.
    unsafe { shim::jump_if_restarted(status) };
}

/// Defines `stm_load_<name>` and `stm_store_<name>` for the C type `$ty`.
macro_rules! typed_accessors {
    ($($load:ident, $store:ident, $ty:ty, $doc:literal;)*) => {$(
        #[doc = concat!("tinySTM's transactional load of ", $doc, " (see the module).")]
        ///
        /// # Safety
        /// See the module.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $load(addr: *const $ty) -> $ty {
            // SAFETY: forwarded contract; this frame owns only integers.
            let bytes = unsafe { load_bytes(stringify!($load), addr as usize) };
            <$ty>::from_ne_bytes(bytes)
        }

        #[doc = concat!("tinySTM's transactional store of ", $doc, " (see the module).")]
        ///
        /// # Safety
        /// See the module.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $store(addr: *mut $ty, value: $ty) {
            // SAFETY: forwarded contract; this frame owns only integers.
            unsafe { store_bytes(stringify!($store), addr as usize, value.to_ne_bytes()) }
        }
    )*};
}

typed_accessors! {
    stm_load_u8, stm_store_u8, u8, "a `uint8_t`";
    stm_load_u16, stm_store_u16, u16, "a `uint16_t`";
    stm_load_u32, stm_store_u32, u32, "a `uint32_t`";
    stm_load_u64, stm_store_u64, u64, "a `uint64_t`";
    stm_load_char, stm_store_char, c_char, "a `char`";
    stm_load_uchar, stm_store_uchar, c_uchar, "an `unsigned char`";
    stm_load_short, stm_store_short, c_short, "a `short`";
    stm_load_ushort, stm_store_ushort, c_ushort, "an `unsigned short`";
    stm_load_int, stm_store_int, c_int, "an `int`";
    stm_load_uint, stm_store_uint, c_uint, "an `unsigned int`";
    stm_load_long, stm_store_long, c_long, "a `long`";
    stm_load_ulong, stm_store_ulong, c_ulong, "an `unsigned long`";
    stm_load_float, stm_store_float, c_float, "a `float`";
    stm_load_double, stm_store_double, c_double, "a `double`";
}

/// tinySTM's transactional load of a pointer (see the module).
///
/// # Safety
/// See the module.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_load_ptr(addr: *const *mut c_void) -> *mut c_void {
    // SAFETY: forwarded contract; this frame owns only integers.
    let bytes: [u8; WORD] = unsafe { load_bytes("stm_load_ptr", addr as usize) };
    usize::from_ne_bytes(bytes) as *mut c_void
}

/// tinySTM's transactional store of a pointer (see the module).
///
/// # Safety
/// See the module.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_store_ptr(addr: *mut *mut c_void, value: *mut c_void) {
    let bytes = (value as usize).to_ne_bytes();
    // SAFETY: forwarded contract; this frame owns only integers.
    unsafe { store_bytes("stm_store_ptr", addr as usize, bytes) }
}

/// tinySTM's `stm_load_bytes`: copies `size` bytes at `addr` into `buf`, reading them
/// in the transaction (see the module). `buf` NULL with `size > 0` is misuse.
///
/// # Safety
/// See the module; `buf` must be valid for writes of `size` bytes and must not overlap
/// memory that transactions access.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_load_bytes(addr: *const u8, buf: *mut u8, size: usize) {
    let status = boundary::status("stm_load_bytes", || {
        if buf.is_null() && size > 0 {
            return Err(crate::status::CapiError::invalid("buf is NULL"));
        }
        // SAFETY: `buf` is valid for `size` bytes (contract).
        let out = unsafe { slice_mut(buf, size) };
        access::load("stm_load_bytes", addr as usize, out, Style::Restart)
    });
    // SAFETY: this frame owns only integers and pointers.
    unsafe { shim::jump_if_restarted(status) };
}

/// tinySTM's `stm_store_bytes`: writes the `size` bytes of `buf` at `addr` in the
/// transaction (see the module). `buf` NULL with `size > 0` is misuse.
///
/// # Safety
/// See the module; `buf` must be valid for reads of `size` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_store_bytes(addr: *mut u8, buf: *const u8, size: usize) {
    let status = boundary::status("stm_store_bytes", || {
        if buf.is_null() && size > 0 {
            return Err(crate::status::CapiError::invalid("buf is NULL"));
        }
        // SAFETY: `buf` is valid for `size` bytes (contract); read before any write.
        let bytes = unsafe { slice(buf, size) };
        access::store(
            "stm_store_bytes",
            addr as usize,
            size,
            |i| bytes[i],
            Style::Restart,
        )
    });
    // SAFETY: this frame owns only integers and pointers.
    unsafe { shim::jump_if_restarted(status) };
}

/// tinySTM's `stm_set_bytes`: writes `byte` to the `count` bytes at `addr` in the
/// transaction (see the module).
///
/// # Safety
/// See the module.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_set_bytes(addr: *mut u8, byte: u8, count: usize) {
    let status = boundary::status("stm_set_bytes", || {
        access::store(
            "stm_set_bytes",
            addr as usize,
            count,
            |_| byte,
            Style::Restart,
        )
    });
    // SAFETY: this frame owns only integers and pointers.
    unsafe { shim::jump_if_restarted(status) };
}

/// A byte slice from C, empty when `size` is 0.
///
/// # Safety
/// `buf` must be valid for reads of `size` bytes when `size > 0`.
unsafe fn slice<'a>(buf: *const u8, size: usize) -> &'a [u8] {
    if size == 0 {
        &[]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(buf, size) }
    }
}

/// A mutable byte slice from C, empty when `size` is 0.
///
/// # Safety
/// `buf` must be valid for writes of `size` bytes when `size > 0`, and not aliased.
unsafe fn slice_mut<'a>(buf: *mut u8, size: usize) -> &'a mut [u8] {
    if size == 0 {
        &mut []
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(buf, size) }
    }
}
