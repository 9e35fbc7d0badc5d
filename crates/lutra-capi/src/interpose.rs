//! The C library's own definitions of the functions this library interposes
//! (`pthread_exit`, `sigaction`, `longjmp` and kin: `task_exit.rs`, `signals.rs`,
//! `abandon.rs`), looked up once with `dlsym(RTLD_NEXT)`.
//!
//! # Invariants
//! - Every lookup is made when the library is loaded (a constructor in
//!   `.init_array`), before any thread or signal handler of the program can call an
//!   interposed function: `dlsym`, which is not async-signal-safe and takes the
//!   loader's lock, is never called from a signal handler or a `fork()`ed child.
//! - A function the C library lacks is 0; calling it stops the process with a
//!   message.

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

unsafe extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

/// `dlsym`'s `RTLD_NEXT` (glibc and musl: `(void *)-1`).
const RTLD_NEXT: *mut c_void = usize::MAX as *mut c_void;

/// The functions looked up, by index.
pub(crate) const NAMES: [&std::ffi::CStr; 7] = [
    c"pthread_exit",
    c"sigaction",
    c"longjmp",
    c"_longjmp",
    c"siglongjmp",
    c"__longjmp_chk",
    c"signal",
];

static NEXT: [AtomicUsize; NAMES.len()] = [const { AtomicUsize::new(0) }; NAMES.len()];

/// Looks every function up (the constructor).
extern "C" fn resolve() {
    for (name, slot) in NAMES.iter().zip(&NEXT) {
        // SAFETY: looks a function up by its NUL-terminated name.
        let function = unsafe { dlsym(RTLD_NEXT, name.as_ptr()) };
        slot.store(function as usize, Ordering::Release);
    }
}

#[used]
#[unsafe(link_section = ".init_array")]
static RESOLVE_AT_LOAD: extern "C" fn() = resolve;

/// The C library's definition of `name` (one of [`NAMES`]), as an address; stops the
/// process if there is none.
pub(crate) fn next(name: &std::ffi::CStr) -> usize {
    let index = NAMES
        .iter()
        .position(|known| *known == name)
        .unwrap_or_else(|| missing(name));
    // ORDERING: pairs with the release store of the constructor (or of a late
    // `resolve` below).
    let mut function = NEXT[index].load(Ordering::Acquire);
    if function == 0 {
        // Not loaded through the loader's constructors (a static link that dropped
        // the section): look up now.
        resolve();
        function = NEXT[index].load(Ordering::Acquire);
    }
    if function == 0 {
        missing(name);
    }
    function
}

#[cold]
fn missing(name: &std::ffi::CStr) -> ! {
    eprintln!(
        "lutra: {}: the C library's definition was not found",
        name.to_string_lossy()
    );
    std::process::abort()
}
