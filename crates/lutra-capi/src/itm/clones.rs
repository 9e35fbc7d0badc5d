//! Clone tables and transactional allocation.
//!
//! A `transaction_safe` function has a transactional clone (`_ZGTt…`), which GCC
//! calls directly when it knows the callee. For calls through a function pointer it
//! asks the library: every object file with such functions lists `(function, clone)`
//! pairs, which the C runtime registers at load (`_ITM_registerTMCloneTable`, from
//! `crtbegin.o`) and withdraws at unload; `_ITM_getTMCloneSafe` and
//! `_ITM_getTMCloneOrIrrevocable` look a function up there.
//!
//! `_ITM_malloc`, `_ITM_calloc` and `_ITM_free` are what GCC calls for `malloc`,
//! `calloc` and `free` inside a transaction: `stm_malloc`'s and `stm_free`'s
//! semantics (a block allocated by a transaction that rolls back is freed; a block
//! freed by one is released after its commit, once no transaction can still read
//! it).
//!
//! # Invariants
//! - `TABLES` holds each registered table once, its pairs sorted by function
//!   address; a lookup never keeps the lock across a restart.

use super::library::fatal;
use super::thread_state::on_thread;
use super::transaction::become_serial;
use crate::memory::{stm_calloc, stm_free, stm_malloc};
use crate::shim;
use std::ffi::c_void;
use std::sync::RwLock;

/// One registered table: its address (its identity for deregistration) and its
/// `(function, clone)` pairs sorted by function.
struct CloneTable {
    address: usize,
    pairs: Vec<(usize, usize)>,
}

static TABLES: RwLock<Vec<CloneTable>> = RwLock::new(Vec::new());

/// An entry of a clone table as the C runtime lays it out.
#[repr(C)]
pub struct CloneEntry {
    function: *const c_void,
    clone: *const c_void,
}

/// libitm's `_ITM_registerTMCloneTable`: registers the `count` `(function, clone)`
/// pairs at `table`, called by the C runtime when an object with
/// `transaction_safe` functions is loaded.
///
/// # Safety
/// `table` points to `count` entries that stay valid until deregistered.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ITM_registerTMCloneTable(table: *const CloneEntry, count: usize) {
    if table.is_null() {
        return;
    }
    // SAFETY: the caller's contract.
    let entries = unsafe { std::slice::from_raw_parts(table, count) };
    let mut pairs: Vec<(usize, usize)> = entries
        .iter()
        .map(|entry| (entry.function as usize, entry.clone as usize))
        .collect();
    pairs.sort_unstable();
    let mut tables = TABLES
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    tables.retain(|known| known.address != table as usize);
    tables.push(CloneTable {
        address: table as usize,
        pairs,
    });
}

/// libitm's `_ITM_deregisterTMCloneTable`: withdraws the table at `table`, called
/// by the C runtime when its object is unloaded. An unknown table is ignored.
#[unsafe(no_mangle)]
pub extern "C" fn _ITM_deregisterTMCloneTable(table: *const CloneEntry) {
    let mut tables = TABLES
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    tables.retain(|known| known.address != table as usize);
}

/// The registered clone of `function`.
fn clone_of(function: usize) -> Option<usize> {
    let tables = TABLES
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    tables.iter().find_map(|table| {
        let index = table
            .pairs
            .binary_search_by_key(&function, |&(known, _)| known)
            .ok()?;
        Some(table.pairs[index].1)
    })
}

/// libitm's `_ITM_getTMCloneSafe`: the transactional clone of `function`, called
/// through a pointer to a `transaction_safe` function inside a transaction. A
/// function without a registered clone stops the process with a message.
#[unsafe(no_mangle)]
pub extern "C" fn _ITM_getTMCloneSafe(function: *mut c_void) -> *mut c_void {
    match clone_of(function as usize) {
        Some(clone) => clone as *mut c_void,
        None => fatal(
            "_ITM_getTMCloneSafe",
            &format!("the function at {function:p} has no transactional clone"),
        ),
    }
}

/// libitm's `_ITM_getTMCloneOrIrrevocable`: the transactional clone of `function`
/// if it has one; otherwise the transaction first turns serial and irrevocable (as
/// `_ITM_changeTransactionMode` does, which may restart it) and `function` itself is
/// returned, to be called uninstrumented.
///
/// # Safety
/// Called by code that GCC compiled with `-fgnu-tm`, inside a transaction.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ITM_getTMCloneOrIrrevocable(function: *mut c_void) -> *mut c_void {
    if let Some(clone) = clone_of(function as usize) {
        return clone as *mut c_void;
    }
    let status = on_thread("_ITM_getTMCloneOrIrrevocable", become_serial);
    // SAFETY: this frame owns only integers and pointers.
    unsafe { shim::jump_if_restarted(status) };
    function
}

/// libitm's `_ITM_malloc`: `malloc` inside a transaction (freed again if the
/// transaction rolls back). NULL when out of memory.
#[unsafe(no_mangle)]
pub extern "C" fn _ITM_malloc(size: usize) -> *mut c_void {
    stm_malloc(size)
}

/// libitm's `_ITM_calloc`: `calloc` inside a transaction (freed again if the
/// transaction rolls back). NULL when out of memory or when `count * size`
/// overflows.
#[unsafe(no_mangle)]
pub extern "C" fn _ITM_calloc(count: usize, size: usize) -> *mut c_void {
    stm_calloc(count, size)
}

/// libitm's `_ITM_free`: `free` inside a transaction: the block is released after
/// the transaction commits, once no transaction can still read it (never if it rolls
/// back). NULL does nothing.
///
/// # Safety
/// `block` is NULL or a live block of the C allocator, freed once; called by code
/// that GCC compiled with `-fgnu-tm`, inside a transaction.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ITM_free(block: *mut c_void) {
    // SAFETY: the caller's contract (`stm_free`'s, with nothing overwritten).
    unsafe { stm_free(block, 0) }
}
