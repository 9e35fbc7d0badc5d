//! A process that was spawned, has finished and was joined leaves nothing behind in
//! the runtime: the memory held after N more spawn + join cycles is the memory held
//! before them (within a small bound for pools that fill up), counted exactly by a
//! counting allocator rather than read from the RSS.

use lutra_lua::{LuaRuntime, Options, Outcome, WaitOutcome};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// The system allocator, counting the bytes currently allocated.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the counter
// only observes sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const CYCLES: usize = 4000;

/// Runs `CYCLES` spawn + join cycles in a new main process of `runtime`.
fn cycles(runtime: &LuaRuntime) {
    let script = format!(
        "for i = 1, {CYCLES} do lutra.spawn(function() end):join() end \
         local p = lutra.spawn(function(x) return x end, 1); assert(p:join() == 1)"
    );
    let main = runtime.spawn_source("=cycles", &script);
    assert_eq!(runtime.wait(), WaitOutcome::AllFinished);
    assert!(
        matches!(main.outcome(), Outcome::Finished(_)),
        "{:?}",
        main.outcome()
    );
}

#[test]
fn spawn_and_join_keep_nothing() {
    let runtime = LuaRuntime::new(Options {
        workers: Some(2),
        ..Options::default()
    });
    // Warm up: pools (states, descriptors, queues) reach their working size.
    cycles(&runtime);
    cycles(&runtime);
    let before = LIVE.load(Ordering::Relaxed);
    cycles(&runtime);
    cycles(&runtime);
    let after = LIVE.load(Ordering::Relaxed);
    let per_cycle = (after - before) as f64 / (2 * CYCLES) as f64;
    eprintln!("bytes kept per spawn + join: {per_cycle:.2}");
    assert!(
        per_cycle < 8.0,
        "each spawn + join kept {per_cycle:.1} bytes ({} bytes over {} cycles)",
        after - before,
        2 * CYCLES
    );
}
