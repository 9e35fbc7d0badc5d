//! tinySTM's `mod_mem.h`: memory allocated and freed by transactions.
//!
//! Blocks come from the C library's `malloc` and go back through its `free`, so a C
//! program may `stm_free` blocks it `malloc`ed itself and `free` blocks that
//! `stm_malloc` returned once no transaction can reach them.
//!
//! # Invariants
//! - A block `stm_malloc`ed by an attempt that aborts is freed at the rollback.
//! - A block `stm_free`d by an attempt is freed only if the attempt commits, and only
//!   once no transaction that could still read it is running (the engine's epochs;
//!   a solo attempt's at its commit, as no other runs: `solo_blocks.rs` of
//!   lutra-stm); the freed range is written (unchanged) so that transactions using
//!   it conflict with the freeing one, unless the attempt runs solo.
//! - A block is claimed (`pending_free.rs`) from its `stm_free` until it is given
//!   back to the C library or the freeing attempt rolls back: a second `stm_free`
//!   meanwhile is refused.

use crate::access::WORD;
use crate::attempt::Style;
use crate::boundary;
use crate::fast;
use crate::pending_free;
use crate::shim;
use crate::status::{CapiError, CapiResult, LUTRA_ENOMEM, LUTRA_OK, Site};
use crate::thread::{self, ThreadTx, with_thread};
use lutra_stm::PerGranule;
use std::ffi::{c_int, c_void};
use std::ops::Range;

unsafe extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn calloc(count: usize, size: usize) -> *mut c_void;
    fn free(block: *mut c_void);
}

/// Gives a block back to the C library (the engine's release function).
///
/// # Safety
/// `addr` must come from the C library's allocator and not be freed yet.
unsafe fn release_with_free(addr: usize, _size: usize) {
    // SAFETY: the caller's contract.
    unsafe { free(addr as *mut c_void) }
}

/// `size` rounded up to whole words (at least one), as tinySTM does, so that
/// word-wise transactional accesses to the block's last bytes stay inside it.
fn rounded(size: usize) -> CapiResult<usize> {
    rounded_words(size).ok_or_else(|| CapiError::new(LUTRA_ENOMEM, "size too large"))
}

/// [`rounded`] without the error: `None` when the size is too large.
#[inline]
fn rounded_words(size: usize) -> Option<usize> {
    size.max(1).checked_next_multiple_of(WORD)
}

/// Allocates with `allocate(rounded size)` and, inside a transaction, records the
/// block so that an abort frees it.
fn allocate(size: usize, allocate: impl FnOnce(usize) -> *mut c_void) -> CapiResult<*mut c_void> {
    let size = rounded(size)?;
    let block = allocate(size);
    if block.is_null() {
        return Err(CapiError::new(LUTRA_ENOMEM, "out of memory"));
    }
    if thread::is_registered() {
        with_thread(|state| {
            record_in(state, block, size);
            Ok(())
        })?;
    }
    Ok(block)
}

/// Inside a transaction of `state`, records `block` (`size` bytes from the C
/// allocator) so that an abort frees it.
fn record_in(state: &mut ThreadTx, block: *mut c_void, size: usize) {
    if state.nesting > 0 {
        state
            .desc
            .record_allocation(block as usize, size, release_with_free);
    }
}

/// tinySTM's `stm_malloc`: allocates `size` bytes (rounded up to whole words) inside
/// the calling thread's transaction; if the transaction aborts, the block is freed.
/// Outside a transaction (or on an unregistered thread) it is plain `malloc`. Returns
/// NULL when out of memory, with the thread's last error set.
#[unsafe(no_mangle)]
pub extern "C" fn stm_malloc(size: usize) -> *mut c_void {
    // A registered plain thread's allocation that succeeds: no boundary (`fast.rs`).
    // SAFETY: entered from C; the reference ends with this call.
    if let Some(state) = unsafe { fast::state() }
        && let Some(size) = rounded_words(size)
    {
        // SAFETY: `malloc` may be called with any size.
        let block = unsafe { malloc(size) };
        if !block.is_null() {
            record_in(state, block, size);
            return block;
        }
    }
    stm_malloc_slow(size)
}

/// Every case of [`stm_malloc`] but a registered plain thread's successful one.
#[cold]
#[inline(never)]
fn stm_malloc_slow(size: usize) -> *mut c_void {
    boundary::value(
        "stm_malloc",
        |_| std::ptr::null_mut(),
        || {
            // SAFETY: `malloc` may be called with any size.
            allocate(size, |size| unsafe { malloc(size) })
        },
    )
}

/// tinySTM's `stm_calloc`: as [`stm_malloc`], for `count` zeroed elements of `size`
/// bytes. Returns NULL when out of memory or when `count * size` overflows.
#[unsafe(no_mangle)]
pub extern "C" fn stm_calloc(count: usize, size: usize) -> *mut c_void {
    boundary::value(
        "stm_calloc",
        |_| std::ptr::null_mut(),
        || {
            let total = count
                .checked_mul(size)
                .ok_or_else(|| CapiError::new(LUTRA_ENOMEM, "count * size overflows"))?;
            // SAFETY: `calloc` may be called with any size.
            allocate(total, |total| unsafe { calloc(1, total) })
        },
    )
}

/// The words of block `addr` (not NULL) that freeing it writes: those of `[addr +
/// idx, addr + idx + size)`.
///
/// # Errors
/// `LUTRA_EINVAL` for a misaligned block or a range that wraps around.
fn words_to_free(addr: usize, idx: usize, size: usize) -> CapiResult<Range<usize>> {
    if !addr.is_multiple_of(WORD) {
        return Err(CapiError::invalid("block address is not aligned to a word"));
    }
    let start = addr
        .checked_add(idx)
        .filter(|start| start.checked_add(size).is_some())
        .ok_or_else(|| CapiError::invalid("range wraps around the address space"))?;
    let first = start - start % WORD;
    Ok(if size == 0 {
        first..first
    } else {
        first..start + size
    })
}

/// Frees block `addr` if the running attempt of `state` commits, after writing
/// `words` (unless the attempt runs solo) so that transactions using the block
/// conflict with this one. Returns `LUTRA_OK` or the status of the abort path.
///
/// # Errors
/// `LUTRA_EINVAL` when `pending_free` can tell that `addr` is no block to free
/// (freed already, on the stack, a global); nothing is done then.
///
/// # Safety
/// A transaction runs on `state`; `addr` is a word-aligned block of the C
/// allocator, live unless `pending_free` can tell otherwise, and `words` lie in it.
#[inline]
unsafe fn free_in(
    state: &mut ThreadTx,
    addr: usize,
    words: Range<usize>,
    style: Style,
) -> CapiResult<c_int> {
    let token = pending_free::claim(addr, state.in_task)?;
    // The claim is given back if the attempt rolls back (the token rides as size).
    state
        .desc
        .record_allocation(addr, token as usize, pending_free::abandon);
    // SAFETY: the block is valid (contract), `words` lie in it and start on a word
    // (`words_to_free`); a solo attempt writes none of them.
    if let Err(abort) = unsafe {
        state
            .desc
            .write_unchanged_mapped::<PerGranule>(words.start, words.len())
    } {
        return Ok(state.after_abort(abort.reason(), Site::Write, style));
    }
    // SAFETY: the block comes from the C allocator (contract), is word-aligned, freed
    // once (claimed above), and `pending_free::release` is how to free it; size 0
    // overwrites nothing more.
    Ok(
        match unsafe { state.desc.free_on_commit(addr, 0, pending_free::release) } {
            Ok(()) => LUTRA_OK,
            Err(abort) => state.after_abort(abort.reason(), Site::Write, style),
        },
    )
}

/// Frees `addr` if the running attempt commits, after writing `[addr + idx, addr +
/// idx + size)` so that transactions using the block conflict with this one.
fn free_on_commit(addr: usize, idx: usize, size: usize, style: Style) -> CapiResult<c_int> {
    if addr == 0 {
        return with_thread(|state| state.require_transaction().map(|()| LUTRA_OK));
    }
    let words = words_to_free(addr, idx, size)?;
    with_thread(|state| {
        state.require_transaction()?;
        // SAFETY: a transaction runs; the block is valid (C caller's contract),
        // word-aligned (checked) and `words` lie in it.
        unsafe { free_in(state, addr, words, style) }
    })
}

/// [`stm_free2`]'s work on a registered plain thread inside a transaction, with a
/// block and range that need no error: the status, or `None` for the general path.
///
/// # Safety
/// As [`stm_free2`].
#[inline]
unsafe fn free_fast(addr: usize, idx: usize, size: usize) -> Option<c_int> {
    // SAFETY: entered from C; the reference ends with this call.
    let state = unsafe { fast::state() }?;
    if state.nesting == 0 || addr == 0 {
        return None;
    }
    let words = words_to_free(addr, idx, size).ok()?;
    // SAFETY: a transaction runs; the block is valid (caller's contract), word-aligned
    // (checked) and `words` lie in it. An error takes the general path, which
    // checks again (nothing was done) and records it.
    unsafe { free_in(state, addr, words, Style::Restart) }.ok()
}

/// tinySTM's `stm_free`: frees the block `addr` (from `stm_malloc`, `stm_calloc` or
/// `malloc`) when the calling thread's transaction commits, once no transaction can
/// still read it; its first `size` bytes are overwritten (transactionally, with
/// their own values) so that concurrent transactions using them conflict. NULL does
/// nothing.
///
/// Must be called inside a transaction; may abort like `stm_store`. Misuse (no
/// transaction, no registered thread, misaligned block) frees nothing and sets the
/// thread's last error; so does a block that is freed already (a free pending in
/// this or another transaction), on the calling thread's stack, or in the program's
/// or a library's static data (`LUTRA_EINVAL`: see `pending_free.rs`). To free outside transactions, unlink the block in a
/// transaction, call `stm_quiesce`, then `free`.
///
/// # Safety
/// `addr` must be NULL or a live block of the C allocator (the start of one), at
/// least `size` bytes long, unless one of the checks above tells otherwise. The caller's frames up to the `sigsetjmp` must be C frames.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_free(addr: *mut c_void, size: usize) {
    // SAFETY: the caller's contract.
    if let Some(status) = unsafe { free_fast(addr as usize, 0, size) } {
        // SAFETY: this frame owns only integers and pointers.
        unsafe { shim::jump_if_restarted(status) };
        return;
    }
    crate::engine::require_started("stm_free");
    let status = boundary::status("stm_free", || {
        free_on_commit(addr as usize, 0, size, Style::Restart)
    });
    // SAFETY: this frame owns only integers and pointers.
    unsafe { shim::jump_if_restarted(status) };
}

/// tinySTM's `stm_free2`: as [`stm_free`], overwriting `size` bytes from byte `idx` of
/// the block.
///
/// # Safety
/// As [`stm_free`], with `idx + size` bytes in the block.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_free2(addr: *mut c_void, idx: usize, size: usize) {
    // SAFETY: the caller's contract.
    if let Some(status) = unsafe { free_fast(addr as usize, idx, size) } {
        // SAFETY: this frame owns only integers and pointers.
        unsafe { shim::jump_if_restarted(status) };
        return;
    }
    crate::engine::require_started("stm_free2");
    let status = boundary::status("stm_free2", || {
        free_on_commit(addr as usize, idx, size, Style::Restart)
    });
    // SAFETY: this frame owns only integers and pointers.
    unsafe { shim::jump_if_restarted(status) };
}

/// tinySTM's `mod_mem_init`: Lutra's transactional allocation needs no set-up and
/// always frees through epochs (tinySTM's `gc`), so this does nothing. May be called
/// at any time.
#[unsafe(no_mangle)]
pub extern "C" fn mod_mem_init(gc: c_int) {
    let _ = gc;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_up_to_words() {
        assert_eq!(rounded(0).unwrap(), WORD);
        assert_eq!(rounded(1).unwrap(), WORD);
        assert_eq!(rounded(WORD + 1).unwrap(), 2 * WORD);
        assert!(rounded(usize::MAX).is_err());
    }
}
