//! Whether the program can call `stm_retry`, which decides whether a thread alone
//! with the engine may run GCC's uninstrumented path (`transaction.rs`).
//!
//! A transaction running uninstrumented writes memory directly: nothing can undo
//! those writes, so such an attempt cannot roll back, and a `stm_retry` inside it
//! (which must roll back before it waits) could only stop the process. GCC's
//! `pr_hasNoAbort` says that a transaction contains no `__transaction_cancel`, but
//! knows nothing of `stm_retry`, a `transaction_pure` call to GCC. So the
//! uninstrumented path is taken only while no code of the program can call it.
//!
//! # Protocol
//! 1. A program calls `stm_retry` through the dynamic linker: the object that calls
//!    it (the executable or a shared library) has `stm_retry` among its dynamic
//!    symbols (an undefined one, resolved to Lutra's). Lutra's own object (the one
//!    holding this code) defines it and never calls it.
//! 2. At every thread's first `_ITM_beginTransaction`, before its attempt begins,
//!    [`refresh`] compares the loader's count of objects added (`dlpi_adds`) with
//!    the one of the last scan; if an object was loaded since (or on the first
//!    call), it scans every loaded object (`dl_iterate_phdr`) for the name in its
//!    dynamic string table, Lutra's own object excepted; if Lutra lies in the
//!    executable (a static link), where the program's calls need no dynamic
//!    symbol, the answer is yes.
//! 3. [`possible`] reads the answer: one load. Not known yet (a thread whose first
//!    transaction has not looked), it counts as yes.
//! 4. A call of `stm_retry` makes the answer yes for good (a caller found by
//!    `dlsym`, which step 2 cannot see).
//!
//! # Invariants
//! - Once yes, the answer stays yes.
//! - The scan never runs while the thread holds the solo gate: it takes the
//!   loader's lock, under which another thread may be registering (a library's
//!   constructor running a transaction), and a thread registering waits for the
//!   solo gate.
//! - An object loaded after the last scan (a `dlopen` between two threads' first
//!   transactions) is not seen until the next one; a `stm_retry` it makes inside a
//!   transaction running uninstrumented stops the process with a message
//!   (`retry.rs`), never rolls back half of it. `LUTRA_STM_SOLO=0` turns the
//!   uninstrumented path off.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

/// The answer is not known: no scan yet.
const UNKNOWN: u8 = 0;
/// No loaded object can call `stm_retry` (as of the last scan).
const NO: u8 = 1;
/// The program can call `stm_retry`.
const YES: u8 = 2;

/// The answer: `UNKNOWN`, `NO` or `YES`.
static ANSWER: AtomicU8 = AtomicU8::new(UNKNOWN);
/// The loader's `dlpi_adds` at the last scan (`u64::MAX`: none yet).
static SCANNED_AT: AtomicU64 = AtomicU64::new(u64::MAX);

/// The name looked for, with its terminating NUL.
const NAME: &[u8] = b"stm_retry\0";

/// Whether the program can call `stm_retry` (step 3): one load.
#[inline(always)]
pub(crate) fn possible() -> bool {
    ANSWER.load(Ordering::Relaxed) != NO
}

/// Step 2: scans again if an object was loaded since the last scan. Called before
/// the calling thread's attempt begins.
#[cold]
#[inline(never)]
pub(crate) fn refresh() {
    if ANSWER.load(Ordering::Relaxed) == YES {
        return;
    }
    let mut scan = Scan {
        own_code: refresh as *const () as usize,
        adds: u64::MAX,
        unchanged: false,
        found: false,
    };
    // SAFETY: `visit` matches the callback type and only reads what the loader
    // hands it, during the call; `scan` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut scan).cast::<c_void>()) };
    if scan.unchanged {
        return;
    }
    SCANNED_AT.store(scan.adds, Ordering::Relaxed);
    let answer = if scan.found { YES } else { NO };
    // A call of `stm_retry` meanwhile (`YES`) stays.
    let _ = ANSWER.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
        (now != YES).then_some(answer)
    });
}

/// Step 4: `stm_retry` was called.
pub(crate) fn note_call() {
    ANSWER.store(YES, Ordering::Relaxed);
}

/// What the scan found so far.
struct Scan {
    /// Where Lutra's own code lies (the address of a function of this module).
    own_code: usize,
    /// `dlpi_adds` of the loader, from the first object.
    adds: u64,
    /// Whether only the count was compared (it had not changed).
    unchanged: bool,
    /// A caller was found.
    found: bool,
}

/// `dl_iterate_phdr`'s callback: one loaded object. Returns non-zero to stop.
unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, size: usize, data: *mut c_void) -> c_int {
    // SAFETY: `data` is the `Scan` of `refresh`, borrowed by nothing else during
    // the iteration; `info` is the loader's, valid during the call, `size` bytes.
    let (scan, info) = unsafe { (&mut *data.cast::<Scan>(), &*info) };
    let has_counts = size >= std::mem::offset_of!(libc::dl_phdr_info, dlpi_subs);
    // The first object carries the loader's counts (glibc gives them to every one).
    if scan.adds == u64::MAX {
        scan.adds = if has_counts {
            info.dlpi_adds
        } else {
            u64::MAX - 1
        };
        if has_counts && scan.adds == SCANNED_AT.load(Ordering::Relaxed) {
            scan.unchanged = true;
            return 1;
        }
    }
    // SAFETY: the loader's program headers of a loaded object.
    let headers = unsafe { object_headers(info) };
    let own = headers.iter().any(|header| {
        header.p_type == libc::PT_LOAD && {
            let start = info.dlpi_addr as usize + header.p_vaddr as usize;
            (start..start + header.p_memsz as usize).contains(&scan.own_code)
        }
    });
    let executable = is_executable(info);
    let caller = if own {
        // Lutra linked into the executable: calls need no dynamic symbol.
        executable
    } else {
        // SAFETY: as above.
        unsafe { mentions_name(info, headers) }
    };
    if caller {
        scan.found = true;
        return 1;
    }
    0
}

/// The program headers of a loaded object.
///
/// # Safety
/// `info` is the loader's description of a loaded object.
unsafe fn object_headers(info: &libc::dl_phdr_info) -> &[libc::Elf64_Phdr] {
    if info.dlpi_phdr.is_null() {
        return &[];
    }
    // SAFETY: the loader's `dlpi_phnum` headers at `dlpi_phdr`, mapped as long as
    // the object is.
    unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
}

/// Whether the object is the executable: the loader gives it an empty name.
fn is_executable(info: &libc::dl_phdr_info) -> bool {
    // SAFETY: `dlpi_name` is a NUL-terminated string or null.
    info.dlpi_name.is_null() || unsafe { *info.dlpi_name } == 0
}

/// One entry of a dynamic section (`Elf64_Dyn`).
#[repr(C)]
struct DynamicEntry {
    tag: i64,
    value: u64,
}

const DT_NULL: i64 = 0;
const DT_STRTAB: i64 = 5;
const DT_STRSZ: i64 = 10;

/// Whether the object's dynamic string table holds `stm_retry` (as a name or the
/// tail of one: a false yes only costs the uninstrumented path).
///
/// # Safety
/// `info` and `headers` describe a loaded object.
unsafe fn mentions_name(info: &libc::dl_phdr_info, headers: &[libc::Elf64_Phdr]) -> bool {
    let Some(dynamic) = headers
        .iter()
        .find(|header| header.p_type == libc::PT_DYNAMIC)
    else {
        return false;
    };
    let base = info.dlpi_addr as usize;
    let mut entry = (base + dynamic.p_vaddr as usize) as *const DynamicEntry;
    let (mut table, mut size) = (0usize, 0usize);
    loop {
        // SAFETY: the dynamic section of a loaded object, ended by `DT_NULL`.
        let DynamicEntry { tag, value } = unsafe { entry.read() };
        match tag {
            DT_NULL => break,
            DT_STRTAB => table = value as usize,
            DT_STRSZ => size = value as usize,
            _ => {}
        }
        // SAFETY: within the section, before its `DT_NULL`.
        entry = unsafe { entry.add(1) };
    }
    if table == 0 || size == 0 {
        return false;
    }
    // glibc relocates the addresses of a writable dynamic section, not those of a
    // read-only one (the vDSO's).
    if table < base {
        table += base;
    }
    // SAFETY: the object's dynamic string table, mapped as long as the object is.
    let strings = unsafe { std::slice::from_raw_parts(table as *const u8, size) };
    strings.windows(NAME.len()).any(|window| window == NAME)
}

#[cfg(test)]
mod tests {
    /// This test binary calls nothing named `stm_retry` through the dynamic linker,
    /// and holds Lutra's code in its executable: a static link, where the answer is
    /// yes (calls need no dynamic symbol).
    #[test]
    fn a_static_link_counts_as_a_caller() {
        super::refresh();
        assert!(super::possible());
        super::refresh();
        assert!(super::possible(), "unchanged without a new object");
    }
}
