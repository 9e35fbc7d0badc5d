//! Transactional loads and stores of any byte range: tinySTM's `stm_load`,
//! `stm_store`, `stm_store2`, and Lutra's status-returning `lutra_stm_load`,
//! `lutra_stm_store`, `lutra_stm_store2`. The typed accessors (`wrappers.rs`) use the
//! same core.
//!
//! The engine works on aligned machine words. A range is covered word by word: a load
//! reads each word and keeps the bytes in range; a store writes each word with a mask
//! selecting the bytes in range (the engine merges the rest with memory at commit).
//!
//! Every access of the C ABI (here, `subword.rs`, `memory.rs`'s frees, and the libitm
//! barriers built on them) reaches the engine through its `*_mapped::<PerGranule>`
//! entries: one ownership record per aligned 32-byte granule, as tinySTM, so the
//! same address always meets the same record, whichever entry touched it.
//!
//! `stm_load`, `stm_store` and their jump-free forms have a fast path (`fast.rs`): a
//! registered plain thread, inside a transaction, at a non-NULL aligned address,
//! calls the engine directly; a conflict goes to a `#[cold]` function that rolls
//! back and jumps (or, jump-free, reports). The typed accessors of `wrappers.h` and
//! libitm's barriers take the same read front through `subword.rs`. Everything else
//! takes the general path below (which checks, records errors and stops panics).
//!
//! # Invariants
//! - Only whole aligned words are handed to the engine; an aligned word never crosses
//!   a page, so reading the word around a valid byte never faults.
//! - A transactional access on a thread that is not registered while the engine is
//!   not running aborts the process (`engine::require_started`): a program never
//!   runs on with accesses that do nothing.

use crate::attempt::Style;
use crate::boundary;
use crate::engine;
use crate::fast;
use crate::shim;
use crate::status::{CapiError, CapiResult, LUTRA_OK, Site};
use crate::thread::{ThreadTx, with_thread};
use lutra_stm::{AbortReason, PerGranule, TxDescriptor};
use std::ffi::c_int;

/// Bytes in a machine word (`stm_word_t`).
pub(crate) const WORD: usize = std::mem::size_of::<usize>();

/// Fails for a NULL address or a range that wraps around the address space.
fn check_range(addr: usize, len: usize) -> CapiResult<()> {
    if addr == 0 {
        return Err(CapiError::invalid("address is NULL"));
    }
    if addr.checked_add(len).is_none() {
        return Err(CapiError::invalid("range wraps around the address space"));
    }
    Ok(())
}

/// Whether `addr` may take the fast path: aligned and not NULL.
#[inline(always)]
fn fast_address(addr: usize) -> bool {
    addr != 0 && addr.is_multiple_of(WORD)
}

/// Reads `out.len()` bytes at `addr` in the running attempt, for the ABI function
/// `function`. Returns `LUTRA_OK` or the status of the abort path.
pub(crate) fn load(
    function: &'static str,
    addr: usize,
    out: &mut [u8],
    style: Style,
) -> CapiResult<c_int> {
    engine::require_started(function);
    check_range(addr, out.len())?;
    with_thread(|state| {
        state.require_transaction()?;
        Ok(match read_range(&mut state.desc, addr, out) {
            Ok(()) => LUTRA_OK,
            Err(reason) => state.after_abort(reason, Site::Read, style),
        })
    })
}

/// Writes `len` bytes at `addr` in the running attempt, byte `i` being `byte_at(i)`,
/// for the ABI function `function`.
/// Returns `LUTRA_OK` or the status of the abort path.
pub(crate) fn store(
    function: &'static str,
    addr: usize,
    len: usize,
    byte_at: impl Fn(usize) -> u8,
    style: Style,
) -> CapiResult<c_int> {
    engine::require_started(function);
    check_range(addr, len)?;
    with_thread(|state| {
        state.require_transaction()?;
        Ok(match write_range(&mut state.desc, addr, len, byte_at) {
            Ok(()) => LUTRA_OK,
            Err(reason) => state.after_abort(reason, Site::Write, style),
        })
    })
}

/// Reads the aligned word at `addr` in the running attempt, for the word-sized ABI
/// function `function` (`stm_load`, `lutra_stm_load`). Returns `LUTRA_OK` or the
/// status of the abort path.
///
/// # Errors
/// As [`load`], and `LUTRA_EINVAL` for an address that is not aligned to a word:
/// the word "at" such an address would take bytes of two words.
fn load_word(
    function: &'static str,
    addr: usize,
    out: &mut [u8; WORD],
    style: Style,
) -> CapiResult<c_int> {
    engine::require_started(function);
    check_range(addr, WORD)?;
    check_aligned(addr)?;
    load(function, addr, out, style)
}

/// Fails for an address that is not aligned to a word.
fn check_aligned(addr: usize) -> CapiResult<()> {
    if !addr.is_multiple_of(WORD) {
        return Err(CapiError::invalid(
            "address is not aligned to a word (use the typed accessors of wrappers.h, \
             or stm_load_bytes / stm_store_bytes, for bytes at any address)",
        ));
    }
    Ok(())
}

/// Writes the bits of `value` selected by `mask` to the aligned word at `addr`, for
/// the ABI function `function` (`LUTRA_EINVAL` if `addr` is misaligned).
pub(crate) fn store_masked(
    function: &'static str,
    addr: usize,
    value: usize,
    mask: usize,
    style: Style,
) -> CapiResult<c_int> {
    engine::require_started(function);
    check_range(addr, WORD)?;
    check_aligned(addr)?;
    with_thread(|state| {
        state.require_transaction()?;
        // SAFETY: `addr` is aligned and, by the C caller's contract, a valid word that
        // is only written by transactions while transactions may access it.
        let written = unsafe {
            state
                .desc
                .store_mapped::<PerGranule>(addr as *mut usize, value, mask)
        };
        Ok(match written {
            Ok(()) => LUTRA_OK,
            Err(abort) => state.after_abort(abort.reason(), Site::Write, style),
        })
    })
}

/// The aligned words covering `[addr, addr + len)`: `(word address, first byte in
/// the word, bytes taken, offset in the range)`.
fn words(addr: usize, len: usize) -> impl Iterator<Item = (usize, usize, usize, usize)> {
    let end = addr + len;
    let first = if len == 0 { end } else { addr - addr % WORD };
    (first..end).step_by(WORD).map(move |word| {
        let from = addr.max(word);
        let to = end.min(word + WORD);
        (word, from - word, to - from, from - addr)
    })
}

fn read_range(desc: &mut TxDescriptor, addr: usize, out: &mut [u8]) -> Result<(), AbortReason> {
    for (word, skip, take, at) in words(addr, out.len()) {
        // SAFETY: `word` is aligned and contains bytes the C caller vouched for (valid,
        // only written by transactions while transactions may access them); an aligned
        // word never crosses a page.
        let value = unsafe { desc.load_mapped::<PerGranule>(word as *const usize) }
            .map_err(|abort| abort.reason())?;
        out[at..at + take].copy_from_slice(&value.to_ne_bytes()[skip..skip + take]);
    }
    Ok(())
}

fn write_range(
    desc: &mut TxDescriptor,
    addr: usize,
    len: usize,
    byte_at: impl Fn(usize) -> u8,
) -> Result<(), AbortReason> {
    for (word, skip, take, at) in words(addr, len) {
        let mut value = [0u8; WORD];
        let mut mask = [0u8; WORD];
        for i in 0..take {
            value[skip + i] = byte_at(at + i);
            mask[skip + i] = 0xFF;
        }
        let (value, mask) = (usize::from_ne_bytes(value), usize::from_ne_bytes(mask));
        // SAFETY: as in `read_range`; the mask limits the write to the caller's bytes.
        unsafe { desc.store_mapped::<PerGranule>(word as *mut usize, value, mask) }
            .map_err(|abort| abort.reason())?;
    }
    Ok(())
}

/// tinySTM's `stm_load`: reads the word at `addr` in the calling thread's transaction.
///
/// May be called inside a transaction. On a conflict the transaction restarts from
/// its `sigsetjmp` (this call does not return), or, with the `no_retry` attribute,
/// ends, and 0 is returned. Misuse (no registered thread, no transaction, NULL
/// address, an address not aligned to a word: `LUTRA_EINVAL`) returns 0 and sets the
/// thread's last error; the transaction goes on.
///
/// # Safety
/// `addr` must be NULL or valid for reads of a word, and only written by transactions
/// while transactions may access it. If the call may jump, the caller's frames up to
/// the `sigsetjmp` must be C frames (or frames that own nothing).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_load(addr: *const usize) -> usize {
    // No nesting check: outside transactions the front is closed, and the full path
    // checks.
    // SAFETY: the thread's read front is closed or its published state's (see
    // `fast.rs`), used by no one else during this call; `addr` is checked, and valid
    // by the caller's contract.
    if let Some(value) = unsafe {
        TxDescriptor::try_load_through_front_mapped::<PerGranule>(fast::read_front(), addr)
    } {
        return value;
    }
    // SAFETY: forwarded contract.
    unsafe { stm_load_engine(addr) }
}

/// [`stm_load`] for every access its inlined common case left: the full read of a
/// registered plain thread inside a transaction, else the general path.
///
/// # Safety
/// As [`stm_load`].
#[cold]
#[inline(never)]
unsafe extern "C" fn stm_load_engine(addr: *const usize) -> usize {
    // SAFETY: entered from C; the reference ends with this call.
    if let Some(state) = unsafe { fast::state() }
        && state.nesting != 0
        && fast_address(addr as usize)
    {
        // SAFETY: aligned, not NULL, and valid by the caller's contract; the inlined
        // read has just declined.
        if let Some(value) = unsafe { state.desc.try_load_past_filter_mapped::<PerGranule>(addr) } {
            return value;
        }
        // SAFETY: as above; the read past the filter declined too.
        return match unsafe { state.desc.load_uninlined_mapped::<PerGranule>(addr) } {
            Ok(value) => value,
            // SAFETY: this frame owns only integers and the state's address.
            Err(abort) => unsafe { access_abort_slow(state, abort.reason(), Site::Read) },
        };
    }
    // SAFETY: forwarded contract.
    unsafe { stm_load_slow(addr) }
}

/// The general path of [`stm_load`].
///
/// # Safety
/// As [`stm_load`].
#[cold]
#[inline(never)]
unsafe extern "C" fn stm_load_slow(addr: *const usize) -> usize {
    let mut bytes = [0u8; WORD];
    let status = boundary::status("stm_load", || {
        load_word("stm_load", addr as usize, &mut bytes, Style::Restart)
    });
    // SAFETY: this frame owns only integers; see the function's contract.
    unsafe { shim::jump_if_restarted(status) };
    usize::from_ne_bytes(bytes)
}

/// A fast-path access met an abort of `reason`: rolls back and restarts (jumping back
/// to the transaction's `sigsetjmp`), or, for a `no_retry` transaction, ends it and
/// returns 0.
///
/// # Safety
/// As [`stm_load`]; `state` is the caller's state from `fast::state`.
#[cold]
#[inline(never)]
pub(crate) unsafe fn access_abort_slow(
    state: &mut ThreadTx,
    reason: AbortReason,
    site: Site,
) -> usize {
    let status = state.after_abort(reason, site, Style::Restart);
    // SAFETY: the frames above own only integers (the contract of `stm_load`).
    unsafe { shim::jump_if_restarted(status) };
    0
}

/// tinySTM's `stm_store`: writes `value` to the word at `addr` in the calling thread's
/// transaction. Aborts and misuse as [`stm_load`] (misuse, a misaligned address
/// included, writes nothing).
///
/// # Safety
/// As [`stm_load`], and `addr` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_store(addr: *mut usize, value: usize) {
    // SAFETY: as in `stm_load`; `addr` is valid for writes by the caller's contract.
    if !unsafe {
        TxDescriptor::try_store_through_front_mapped::<PerGranule>(fast::read_front(), addr, value)
    } {
        // SAFETY: forwarded contract.
        unsafe { stm_store_engine(addr, value) }
    }
}

/// [`stm_store`] for every write its inlined common case left: the full write of a
/// registered plain thread inside a transaction, else the general path.
///
/// # Safety
/// As [`stm_store`].
#[cold]
#[inline(never)]
unsafe extern "C" fn stm_store_engine(addr: *mut usize, value: usize) {
    // SAFETY: entered from C; the reference ends with this call.
    if let Some(state) = unsafe { fast::state() }
        && state.nesting != 0
        && fast_address(addr as usize)
    {
        // SAFETY: aligned, not NULL, and valid by the caller's contract.
        if let Err(abort) = unsafe {
            state
                .desc
                .store_mapped::<PerGranule>(addr, value, usize::MAX)
        } {
            // SAFETY: this frame owns only integers and the state's address.
            unsafe { access_abort_slow(state, abort.reason(), Site::Write) };
        }
        return;
    }
    // SAFETY: forwarded contract.
    unsafe { stm_store_slow(addr, value) }
}

/// The general path of [`stm_store`].
///
/// # Safety
/// As [`stm_store`].
#[cold]
#[inline(never)]
unsafe fn stm_store_slow(addr: *mut usize, value: usize) {
    let status = boundary::status("stm_store", || {
        store_masked(
            "stm_store",
            addr as usize,
            value,
            usize::MAX,
            Style::Restart,
        )
    });
    // SAFETY: this frame owns only integers; see the function's contract.
    unsafe { shim::jump_if_restarted(status) };
}

/// tinySTM's `stm_store2`: writes the bits of `value` selected by `mask` to the word
/// at `addr`, which must be aligned (`LUTRA_EINVAL` otherwise). Aborts and misuse as
/// [`stm_store`].
///
/// # Safety
/// As [`stm_store`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_store2(addr: *mut usize, value: usize, mask: usize) {
    let status = boundary::status("stm_store2", || {
        store_masked("stm_store2", addr as usize, value, mask, Style::Restart)
    });
    // SAFETY: this frame owns only integers; see the function's contract.
    unsafe { shim::jump_if_restarted(status) };
}

/// Lutra's jump-free `stm_load`: reads the word at `addr` into `*value`.
///
/// Returns `LUTRA_OK`; a positive tinySTM abort code when the attempt is aborted (it
/// stays doomed: return the code from the function run by `stm_atomically`, which
/// then runs it again); or a negative `LUTRA_E*` code on misuse. Never jumps.
///
/// # Safety
/// `addr` as for [`stm_load`]; `value` must be NULL (`LUTRA_EINVAL`) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lutra_stm_load(addr: *const usize, value: *mut usize) -> c_int {
    // SAFETY: entered from C; the reference ends with this call.
    if let Some(state) = unsafe { fast::state() }
        && state.nesting != 0
        && fast_address(addr as usize)
        && !value.is_null()
    {
        // SAFETY: aligned, not NULL, and valid by the caller's contract.
        let (word, status) = match unsafe { state.desc.load_mapped::<PerGranule>(addr) } {
            Ok(word) => (word, LUTRA_OK),
            Err(abort) => (0, report_abort_slow(state, abort.reason(), Site::Read)),
        };
        // SAFETY: `value` is non-NULL and writable (contract).
        unsafe { value.write(word) };
        return status;
    }
    // SAFETY: forwarded contract.
    unsafe { lutra_stm_load_slow(addr, value) }
}

/// A fast-path status-style access met an abort: the attempt stays doomed and its
/// code is returned.
#[cold]
#[inline(never)]
fn report_abort_slow(state: &mut ThreadTx, reason: AbortReason, site: Site) -> c_int {
    state.after_abort(reason, site, Style::Report)
}

/// The general path of [`lutra_stm_load`].
///
/// # Safety
/// As [`lutra_stm_load`].
#[cold]
#[inline(never)]
unsafe fn lutra_stm_load_slow(addr: *const usize, value: *mut usize) -> c_int {
    boundary::status("lutra_stm_load", || {
        if value.is_null() {
            return Err(CapiError::invalid("value is NULL"));
        }
        let mut bytes = [0u8; WORD];
        let status = load_word("lutra_stm_load", addr as usize, &mut bytes, Style::Report)?;
        // SAFETY: `value` is non-NULL and writable (contract).
        unsafe { value.write(usize::from_ne_bytes(bytes)) };
        Ok(status)
    })
}

/// Lutra's jump-free `stm_store`. Returns as [`lutra_stm_load`].
///
/// # Safety
/// As [`stm_store`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lutra_stm_store(addr: *mut usize, value: usize) -> c_int {
    // SAFETY: entered from C; the reference ends with this call.
    if let Some(state) = unsafe { fast::state() }
        && state.nesting != 0
        && fast_address(addr as usize)
    {
        // SAFETY: aligned, not NULL, and valid by the caller's contract.
        return match unsafe {
            state
                .desc
                .store_mapped::<PerGranule>(addr, value, usize::MAX)
        } {
            Ok(()) => LUTRA_OK,
            Err(abort) => report_abort_slow(state, abort.reason(), Site::Write),
        };
    }
    // SAFETY: forwarded contract.
    unsafe { lutra_stm_store_slow(addr, value) }
}

/// The general path of [`lutra_stm_store`].
///
/// # Safety
/// As [`lutra_stm_store`].
#[cold]
#[inline(never)]
unsafe fn lutra_stm_store_slow(addr: *mut usize, value: usize) -> c_int {
    boundary::status("lutra_stm_store", || {
        store_masked(
            "lutra_stm_store",
            addr as usize,
            value,
            usize::MAX,
            Style::Report,
        )
    })
}

/// Lutra's jump-free `stm_store2`. Returns as [`lutra_stm_load`].
///
/// # Safety
/// As [`stm_store`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lutra_stm_store2(addr: *mut usize, value: usize, mask: usize) -> c_int {
    boundary::status("lutra_stm_store2", || {
        store_masked(
            "lutra_stm_store2",
            addr as usize,
            value,
            mask,
            Style::Report,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_cover_a_range_exactly() {
        let base = 0x1000;
        let parts: Vec<_> = words(base + 5, 13).collect();
        assert_eq!(
            parts,
            vec![(base, 5, 3, 0), (base + 8, 0, 8, 3), (base + 16, 0, 2, 11)]
        );
        assert_eq!(
            words(base, WORD).collect::<Vec<_>>(),
            vec![(base, 0, WORD, 0)]
        );
        assert_eq!(words(base + 3, 0).count(), 0);
    }
}
