//! The one path for a transactional access to a value of any type at any address:
//! the typed accessors of `stm.h` (`wrappers.rs`: `stm_load_u8` … `stm_store_ptr`)
//! and GCC's barriers (`itm/barriers.rs`: `_ITM_RU1` … `_ITM_WM256`) both call
//! [`load`] and [`store`], each with its own general path for what these leave:
//! a load takes it as a closure, called from the cold part (so that the hot part
//! has a single exit); a store returns false and its caller takes it (so that
//! nothing the general path needs, such as a function's name, is prepared on the
//! hot part). Both shapes were chosen by counting instructions (callgrind).
//!
//! The engine works on aligned machine words. A value whose bytes lie in one
//! aligned word (every value of up to 8 bytes at an address aligned to its size,
//! and many others) is read as that word, from which its bytes are taken, and
//! written as that word with a mask selecting its bytes (the engine merges the
//! rest with memory at commit).
//!
//! # Protocol: a load
//! 1. A value within one word is read through the calling thread's read front
//!    ([`TxDescriptor::try_load_through_front_mapped`]), as `stm_load` reads: inlined, it
//!    tests the front's room and appends to the read set, or, in a solo attempt,
//!    loads memory.
//! 2. Where the front declines (closed: no transaction, a task of the scheduler,
//!    a doomed attempt; full; a locked record), the cold [`load_engine`]: on a
//!    registered plain thread inside a transaction, the engine's full load of the
//!    word; a conflict rolls back and restarts (`access::access_abort_slow`:
//!    jumps, or ends a `no_retry` transaction and yields zeros).
//! 3. Anything else — a value crossing a word or wider than one, a task of the
//!    scheduler, misuse — takes the caller's general path, which checks, records
//!    errors and stops panics.
//!
//! # Protocol: a store
//! 1. A whole aligned word is written through the read front
//!    ([`TxDescriptor::try_store_through_front_mapped`]), as `stm_store` writes; where
//!    the front declines, the cold [`store_engine`] writes it with the engine's
//!    full store (a registered plain thread inside a transaction).
//! 2. A value within one word, on a registered plain thread inside a transaction
//!    (the fast slot, `fast.rs`): one masked store of the word, inlined.
//! 3. Anything else: the caller's general path.
//!
//! # Invariants
//! - Only whole aligned words reach the engine, and never the word at address 0
//!   from a caller that may pass NULL ([`Null::Reported`]); an aligned word never
//!   crosses a page, so reading the word around a valid byte never faults.
//! - A masked store's mask selects exactly the value's bytes: the other bytes of
//!   the word are the memory's at commit.
//! - The frames of the callers own nothing (only integers and addresses): a
//!   conflict's restart jumps over them.

use crate::access::{WORD, access_abort_slow};
use crate::fast;
use crate::status::Site;
use lutra_stm::{PerGranule, TxDescriptor};
use std::mem::size_of;

/// Whether a `T` at `offset` bytes into an aligned word lies within that word.
#[inline(always)]
const fn within_word<T>(offset: usize) -> bool {
    size_of::<T>() <= WORD && offset + size_of::<T>() <= WORD
}

/// The `T` at `offset` bytes into the word `word`.
///
/// # Safety
/// `within_word::<T>(offset)`, and every bit pattern of `T` is a value.
#[inline(always)]
unsafe fn take<T: Copy>(word: usize, offset: usize) -> T {
    let bytes = word.to_ne_bytes();
    // SAFETY: `offset + size_of::<T>()` bytes lie in `bytes` (the contract); every
    // bit pattern is a `T` (the contract).
    unsafe { bytes.as_ptr().add(offset).cast::<T>().read_unaligned() }
}

/// `value` placed `offset` bytes into a word, and the mask selecting its bytes.
///
/// # Safety
/// `within_word::<T>(offset)`.
#[inline(always)]
unsafe fn place<T: Copy>(value: T, offset: usize) -> (usize, usize) {
    let mut bytes = [0u8; WORD];
    let mut mask = [0u8; WORD];
    // SAFETY: `offset + size_of::<T>()` bytes lie in `bytes` (the contract).
    unsafe {
        bytes
            .as_mut_ptr()
            .add(offset)
            .cast::<T>()
            .write_unaligned(value)
    };
    mask[offset..offset + size_of::<T>()].fill(0xFF);
    (usize::from_ne_bytes(bytes), usize::from_ne_bytes(mask))
}

/// Reads the `T` at `addr` in the calling thread's transaction (see the module's
/// protocol); `general` reads it when the common case does not apply.
///
/// On a conflict the transaction restarts (this call does not return) or, if it
/// is `no_retry`, ends, and the value's bytes are zeros.
///
/// # Safety
/// `addr` is NULL or valid for reads of a `T`, and only written by transactions
/// while transactions may access it (this includes the other bytes of the word it
/// lies in); every bit pattern of `T` is a value; the callers' frames own nothing.
#[inline(always)]
pub(crate) unsafe fn load<T: Copy>(addr: usize, general: impl FnOnce() -> T) -> T {
    let offset = addr % WORD;
    if within_word::<T>(offset) {
        // SAFETY: the thread's read front is closed or its published state's (see
        // `fast.rs`), used by no one else during this call; the word holding the
        // value is valid (contract; `try_load_through_front_mapped` declines NULL).
        let read = unsafe {
            TxDescriptor::try_load_through_front_mapped::<PerGranule>(
                fast::read_front(),
                (addr - offset) as *const usize,
            )
        };
        if let Some(word) = read {
            // SAFETY: the value lies within the word; any bit pattern (contract).
            return unsafe { take(word, offset) };
        }
    }
    // SAFETY: forwarded contract.
    unsafe { load_engine(addr, general) }
}

/// Step 2 of a load: the engine's full read of the word, else `general`.
///
/// # Safety
/// As [`load`].
#[cold]
#[inline(never)]
unsafe fn load_engine<T: Copy>(addr: usize, general: impl FnOnce() -> T) -> T {
    let offset = addr % WORD;
    let word = addr - offset;
    if within_word::<T>(offset) && word != 0 {
        // SAFETY: entered from C; the reference ends with this call.
        if let Some(state) = unsafe { fast::state() }
            && state.nesting != 0
        {
            // SAFETY: the aligned word holding the value: valid (contract); the
            // read through the front has just declined.
            let value = match unsafe {
                state
                    .desc
                    .load_uninlined_mapped::<PerGranule>(word as *const usize)
            } {
                Ok(value) => value,
                // SAFETY: this frame owns only integers and the state's address.
                Err(abort) => unsafe { access_abort_slow(state, abort.reason(), Site::Read) },
            };
            // SAFETY: the value lies within the word; any bit pattern (contract).
            return unsafe { take(value, offset) };
        }
    }
    general()
}

/// What a store does with the address NULL (a value within the word at address 0).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Null {
    /// Misuse that the general path reports (`stm.h`'s accessors): tested first.
    Reported,
    /// Never passed (code that GCC compiled dereferences the address anyway): not
    /// tested, which keeps the barriers' common case a test shorter.
    NotPassed,
}

/// Writes `value` to `addr` in the calling thread's transaction (see the module's
/// protocol): true, or false (nothing done) when the caller must take its general
/// path; `null` says whether `addr` may be NULL.
///
/// On a conflict the transaction restarts (this call does not return) or, if it
/// is `no_retry`, ends, having written nothing.
///
/// # Safety
/// As [`load`], and `addr` must be valid for writes (with [`Null::NotPassed`],
/// never NULL).
#[inline(always)]
pub(crate) unsafe fn store<T: Copy>(addr: usize, value: T, null: Null) -> bool {
    let offset = addr % WORD;
    if size_of::<T>() == WORD {
        // SAFETY: `T` is exactly a word; any bit pattern is a `usize`.
        let whole = unsafe { std::mem::transmute_copy::<T, usize>(&value) };
        // SAFETY: as in `load`; `addr` is valid for writes (contract), and the
        // front declines an address that is NULL or not aligned.
        if unsafe {
            TxDescriptor::try_store_through_front_mapped::<PerGranule>(
                fast::read_front(),
                addr as *mut usize,
                whole,
            )
        } {
            return true;
        }
        // SAFETY: forwarded contract.
        return unsafe { store_engine(addr, value) };
    }
    if within_word::<T>(offset) && (null == Null::NotPassed || addr != 0) {
        // SAFETY: entered from C; the reference ends with this call.
        if let Some(state) = unsafe { fast::state() }
            && state.nesting != 0
        {
            // SAFETY: the value lies within the word.
            let (word, mask) = unsafe { place(value, offset) };
            // SAFETY: the aligned word holding the value: valid (contract); the
            // mask limits the write to the value's bytes.
            let written = unsafe {
                state
                    .desc
                    .store_mapped::<PerGranule>((addr - offset) as *mut usize, word, mask)
            };
            if let Err(abort) = written {
                // SAFETY: this frame owns only integers and the state's address.
                unsafe { access_abort_slow(state, abort.reason(), Site::Write) };
            }
            return true;
        }
    }
    false
}

/// The rest of a store of a whole word: the engine's full write, else false.
///
/// # Safety
/// As [`store`].
#[cold]
#[inline(never)]
unsafe fn store_engine<T: Copy>(addr: usize, value: T) -> bool {
    if size_of::<T>() == WORD
        && addr != 0
        && addr.is_multiple_of(WORD)
        // SAFETY: entered from C; the reference ends with this call.
        && let Some(state) = unsafe { fast::state() }
        && state.nesting != 0
    {
        // SAFETY: `T` is exactly a word; any bit pattern is a `usize`.
        let whole = unsafe { std::mem::transmute_copy::<T, usize>(&value) };
        // SAFETY: aligned, not NULL, valid for writes (contract).
        if let Err(abort) = unsafe {
            state
                .desc
                .store_mapped::<PerGranule>(addr as *mut usize, whole, usize::MAX)
        } {
            // SAFETY: this frame owns only integers and the state's address.
            unsafe { access_abort_slow(state, abort.reason(), Site::Write) };
        }
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_within_a_word_is_taken_and_placed_at_its_offset() {
        assert!(within_word::<u16>(6));
        assert!(!within_word::<u16>(7));
        assert!(!within_word::<[u8; 9]>(0));
        let word = usize::from_ne_bytes([1, 2, 3, 4, 5, 6, 7, 8]);
        // SAFETY: within the word; any bit pattern is a `[u8; 3]`.
        assert_eq!(unsafe { take::<[u8; 3]>(word, 5) }, [6, 7, 8]);
        // SAFETY: within the word.
        let (placed, mask) = unsafe { place([9u8, 10], 3) };
        assert_eq!(placed.to_ne_bytes(), [0, 0, 0, 9, 10, 0, 0, 0]);
        assert_eq!(mask.to_ne_bytes(), [0, 0, 0, 0xFF, 0xFF, 0, 0, 0]);
    }
}
