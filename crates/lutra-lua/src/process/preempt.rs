//! Preemption by time slice: a process that runs a whole slice without yielding is
//! stopped at its next Lua instruction and yields its worker; a process that yields in
//! time pays nothing.
//!
//! Lua 5.4 runs its hook machinery (`luaG_traceexec`) on *every* VM instruction while
//! a count hook is set, so a hook left on makes CPU-bound Lua about 2x slower. Here
//! the hook is set only when a slice has run out, asynchronously, as `lua_sethook`
//! allows (ldebug.c: it "can be called asynchronously (e.g. during a signal)"; lua.c's
//! Ctrl-C handler does just that):
//!
//! 1. A worker entering a slice ([`Slice::enter`]) makes its slot's sequence number
//!    odd, and names the Lua thread it resumes in `running` of the thread-local
//!    [`NAMED`]; the native `coroutine.resume` ([`resume`]) names each coroutine for
//!    as long as it runs it. Leaving the slice makes the sequence even and clears
//!    `running`.
//! 2. The ticker thread wakes once per slice length. A slot whose sequence is odd and
//!    the same as at the previous tick has run at least one whole slice: the ticker
//!    stores that sequence as the slot's target and sends the worker `SIGURG` (again
//!    after 2, 4, 8... ticks if the slice goes on, see [`signal_now`]).
//! 3. The signal handler, on that worker, sets a count hook of 1 on `running` if the
//!    slot's sequence is still the target (the slice the ticker meant).
//! 4. Outside `atomic` and where the thread can yield, the hook marks the preemption
//!    (`ProcessContext::preempted`) and yields, staying set until the thread has
//!    resumed (see [`YIELDED`]); otherwise it clears itself, the process goes on and
//!    the next tick signals again. The resumer reads the mark in the same C call that
//!    resumed the thread: the native [`resume`] turns it into a `PREEMPTED` value
//!    that the prelude's relay passes up (`prelude.lua`), before any Lua code (which a
//!    preemption of the resumer could interrupt) runs; the task reads it for the
//!    main coroutine (`task.rs`).
//!
//! 5. A task woken from outside the workers (a timer, a host) may wait for a busy
//!    worker's slice to end: the scheduler then calls [`Hurry::hurry`], which ticks
//!    at once (step 2), but never sooner than half a slice after the previous tick.
//!    A slice that an early tick sees for the first time makes the next tick early
//!    too (once: that tick asks for no other), so it is signalled half a slice later
//!    if still running: a woken task
//!    waits for a busy worker about one slice at most (rather than two), and a
//!    slice cut short by early ticks has run at least half a slice.
//!
//! 6. A worker blocked inside a C call (`blocked.rs`: the same scheduler slice at two
//!    looks a threshold apart, no CPU used, asleep in the kernel) has its seat
//!    retaken: the scheduler hands the worker's queue to a spare thread
//!    (`lutra_sched::Carrier::retake`), and the ticker signals the blocked thread
//!    (steps 2, 3) so that its process yields at the first instruction after the
//!    call, ending the slice on that thread, which then parks in the scheduler's
//!    pool. While the thread still sleeps in the call (its CPU clock nearly still
//!    since the last look), the ticker sends it no further overrun signals: each
//!    would only interrupt the call; once the call returns and the thread computes
//!    (its process could not yield there), the signals resume. The ticker looks for
//!    blocked workers at every tick, and also every half threshold, between ticks,
//!    for two slices after a look that found one blocked or about to be: a call that
//!    blocks then is handed off between one and one and a half thresholds after it
//!    blocked. (A look at a computing worker reads its CPU clock only; the kernel's
//!    view of the thread is read for an idle one.)
//!
//! 7. A C call known to block (`early_hand_off.rs`: a command run by `os.execute`, a
//!    read of an `io.popen` pipe with nothing to read yet whose process cannot park,
//!    `popen/wait.rs`) does not wait for step 6:
//!    right before it, the worker has its own seat retaken and arms its own hook
//!    ([`hand_off_before_blocking`]); the rest is step 6's.
//!
//! # Invariants
//! - `running` is null outside a slice; within one it names a live Lua thread: the
//!   one being resumed, which its resumer keeps alive while it is named.
//! - A hook is set only on the named thread, and clears itself the first time it runs
//!   without yielding (at the latest two instructions after the thread resumes),
//!   putting back the hook the program had set on that thread (`debug.sethook`),
//!   whose other events it hands on meanwhile (`user_hook.rs`). A signal that lands just as
//!   a resume returns may leave it on a suspended coroutine of the same process: that
//!   coroutine yields once, early, when resumed.
//! - A process asked to cancel is stopped by the hook with an error instead of a
//!   yield (`cancel.rs`).
//! - The ticker sleeps when no worker is in a slice; a worker entering one wakes it
//!   (sequence store and `asleep` load are SeqCst on both sides: no lost wake-up).
//! - A slot belongs to one thread (a worker's carrier thread, `lutra_sched`'s
//!   `carrier.rs`), whichever worker it runs; the ticker signals a thread only while
//!   its slot is in a slice.
//! - The ticker is joined before the workers can go away (the runtime drops the
//!   [`Preemptor`] first), so it never signals a thread that has exited. Its wait
//!   between ticks ends as soon as the preemptor stops (it does not hold up the end
//!   of the program for the rest of a slice).

use crate::process::blocked::{self, CpuReading, Probe, Verdict, Watch};
use crate::process::{ProcessContext, state};
use mlua::ffi::{self, lua_State};
use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering, compiler_fence};
use std::sync::{Arc, Condvar, Mutex, Once, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The signal that asks a worker to stop its process (ignored by default, used by
/// nothing else in the runtime).
const PREEMPT_SIGNAL: c_int = libc::SIGURG;

thread_local! {
    /// What this worker's slice names (step 1): one thread-local, so that a slice pays
    /// one lookup (a call to `__tls_get_addr` in a shared library) for all of it.
    static NAMED: SliceLocal = const { SliceLocal::new() };
    /// This worker's slot with the preemptor it belongs to (registered at its first
    /// slice).
    static REGISTERED: RefCell<Option<(Weak<Inner>, Arc<Slot>)>> = const { RefCell::new(None) };
}

/// What a worker's slice names, in [`NAMED`]. It has no destructor: the signal handler
/// reads it, and a thread-local with one would register it on first use.
///
/// # Invariants
/// - `running` and `slot` are null outside a slice with preemption on (see the module
///   invariants); `context` is the context of the process in the slice, null outside
///   one.
/// - `owner` and `registered` are the preemptor and slot that [`REGISTERED`] holds
///   (null before the first registration): its `Weak` keeps `owner`'s allocation, so
///   an equal address is the same preemptor, and `registered` is one of its slots.
struct SliceLocal {
    running: AtomicPtr<lua_State>,
    slot: AtomicPtr<Slot>,
    context: Cell<*const ProcessContext>,
    owner: Cell<*const Inner>,
    registered: Cell<*const Slot>,
}

impl SliceLocal {
    const fn new() -> Self {
        Self {
            running: AtomicPtr::new(null_mut()),
            slot: AtomicPtr::new(null_mut()),
            context: Cell::new(std::ptr::null()),
            owner: Cell::new(std::ptr::null()),
            registered: Cell::new(std::ptr::null()),
        }
    }

    /// The calling thread's, for as long as the thread lives.
    fn here() -> &'static Self {
        // SAFETY: the value has no destructor, so its storage stays valid until the
        // thread exits; the reference is used on this thread only (it is not `Sync`).
        NAMED.with(|named| unsafe { &*(named as *const Self) })
    }
}

/// The context of the process in the slice this worker runs, null outside one.
pub(crate) fn slice_context() -> *const ProcessContext {
    NAMED.with(|named| named.context.get())
}

/// One worker thread, as the ticker sees it.
struct Slot {
    thread: libc::pthread_t,
    /// How the ticker finds the thread blocked in a call (`blocked.rs`); `None` on a
    /// thread that is no scheduler worker.
    probe: Option<Probe>,
    /// The ticker's own memory of the thread (only the ticker locks it).
    watch: Mutex<Watch>,
    /// Odd while the worker runs a slice; bumped at every entry and exit.
    sequence: AtomicU64,
    /// The sequence the ticker meant when it last signalled.
    target: AtomicU64,
}

/// Whether a slot's sequence number says its worker is in a slice.
fn in_slice(sequence: u64) -> bool {
    sequence % 2 == 1
}

struct Inner {
    slice: Duration,
    slots: Mutex<Vec<Arc<Slot>>>,
    /// The ticker waits for a slice to start (no worker is in one).
    asleep: AtomicBool,
    /// A task woken from outside waits for a worker: the next tick comes early.
    hurried: AtomicBool,
    stop: AtomicBool,
    lock: Mutex<()>,
    changed: Condvar,
}

/// Preemption for one runtime: its ticker thread and its workers' slots. Inert when
/// the slice length is zero (`--preempt 0`).
pub(crate) struct Preemptor {
    inner: Option<Arc<Inner>>,
    ticker: Mutex<Option<JoinHandle<()>>>,
}

impl Preemptor {
    /// Preemption after `slice` of running without a yield; never for a zero slice.
    pub(crate) fn new(slice: Duration) -> Self {
        let inner = (!slice.is_zero()).then(|| {
            Arc::new(Inner {
                slice,
                slots: Mutex::new(Vec::new()),
                asleep: AtomicBool::new(true),
                hurried: AtomicBool::new(false),
                stop: AtomicBool::new(false),
                lock: Mutex::new(()),
                changed: Condvar::new(),
            })
        });
        Self {
            inner,
            ticker: Mutex::new(None),
        }
    }

    /// What the scheduler calls when a task woken from outside the workers waits for
    /// one (step 5); `None` when preemption is off.
    pub(crate) fn hurry(&self) -> Option<Hurry> {
        self.inner.clone().map(Hurry)
    }

    /// This worker's slot (registered, and the ticker started, on first use), as
    /// `named` (the calling thread's) caches it: one of `inner.slots`.
    fn slot(&self, inner: &Arc<Inner>, named: &SliceLocal) -> *const Slot {
        if std::ptr::eq(named.owner.get(), Arc::as_ptr(inner)) {
            return named.registered.get();
        }
        self.register(inner, named)
    }

    #[cold]
    fn register(&self, inner: &Arc<Inner>, named: &SliceLocal) -> *const Slot {
        install_handler();
        let slot = Arc::new(Slot {
            // SAFETY: pthread_self has no preconditions.
            thread: unsafe { libc::pthread_self() },
            probe: Probe::here(),
            watch: Mutex::new(Watch::default()),
            sequence: AtomicU64::new(0),
            target: AtomicU64::new(u64::MAX),
        });
        lock(&inner.slots).push(slot.clone());
        REGISTERED.set(Some((Arc::downgrade(inner), slot.clone())));
        named.owner.set(Arc::as_ptr(inner));
        named.registered.set(Arc::as_ptr(&slot));
        let mut ticker = lock(&self.ticker);
        if ticker.is_none() {
            let inner = inner.clone();
            *ticker = Some(
                std::thread::Builder::new()
                    .name("lutra-preempt".into())
                    .spawn(move || inner.tick())
                    .expect("the OS refused to start the preemption thread"),
            );
        }
        Arc::as_ptr(&slot)
    }
}

impl Drop for Preemptor {
    fn drop(&mut self) {
        let Some(inner) = &self.inner else { return };
        // ORDERING: stored before taking `lock` to notify: the ticker reads `stop` under
        // `lock` before it waits (`wait_one_slice`, `sleep_until_busy`), so the lock orders
        // the two and the notification cannot fall between them; SeqCst is stronger than
        // needed. The ticker's unlocked read in `tick` is a hint (no signal after the
        // stop).
        inner.stop.store(true, Ordering::SeqCst);
        {
            let _guard = lock(&inner.lock);
            inner.changed.notify_all();
        }
        if let Some(ticker) = lock(&self.ticker).take() {
            let _ = ticker.join();
        }
    }
}

impl Inner {
    /// The ticker thread (step 2, and step 6's looks for blocked workers).
    fn tick(&self) {
        // Per slot: the sequence seen at the previous tick, for how many ticks since
        // then it has not moved, and the thread's CPU clock when it was last found
        // asleep in a handed-off call (see `overrun_signal_needed`).
        let mut seen: Vec<(u64, u32, Option<CpuReading>)> = Vec::new();
        // Whether this tick is early because the previous one asked for it (step 5):
        // it asks for no other, so a hurry makes at most two early ticks.
        let mut followed_up = false;
        let threshold = blocked::threshold(self.slice);
        let mut last = Instant::now();
        // Until when the ticker also looks for blocked workers between ticks (step 6).
        let mut quick_until = last;
        while let Some(wake) = self.wait_tick(last, quick_until, threshold) {
            let now = Instant::now();
            let Wake::Tick(early) = wake else {
                if self.hand_off_blocked(now, threshold) {
                    quick_until = now + 2 * self.slice;
                }
                continue;
            };
            last = now;
            let (mut busy, mut fresh) = (false, false);
            {
                let slots = lock(&self.slots);
                seen.resize(slots.len(), (0, 0, None));
                for (slot, (last, overrun, asleep_at)) in slots.iter().zip(seen.iter_mut()) {
                    // ORDERING: pairs with the worker's SeqCst bumps in `Slice::enter` and
                    // its drop; here the value only feeds the overrun count (no data is
                    // read through it), so coherence on the one word would do.
                    let sequence = slot.sequence.load(Ordering::SeqCst);
                    if in_slice(sequence) && sequence == *last {
                        *overrun += 1;
                        // ORDERING: a hint, see the store in `Preemptor`'s drop; a stale
                        // `false` signals a worker that is still alive (the ticker is
                        // joined before the workers go).
                        if signal_now(*overrun)
                            && !self.stop.load(Ordering::SeqCst)
                            && slot.overrun_signal_needed(asleep_at, now)
                        {
                            slot.signal(sequence);
                        }
                    } else {
                        *overrun = 0;
                        *asleep_at = None;
                        fresh |= in_slice(sequence);
                    }
                    busy |= in_slice(sequence);
                    *last = sequence;
                }
            }
            if self.hand_off_blocked(now, threshold) {
                quick_until = now + 2 * self.slice;
            }
            followed_up = early && fresh && !followed_up;
            if followed_up {
                // A slice seen for the first time by an early tick is signalled by
                // the next one, early too (step 5).
                // ORDERING: pairs with `Hurry::hurry`'s swap: a hurry that finds it set
                // asks for nothing more (this tick's follow-up is early already); read back
                // by this thread in `wait_one_slice`.
                self.hurried.store(true, Ordering::SeqCst);
            }
            if !busy {
                self.sleep_until_busy();
                last = Instant::now();
            }
        }
    }

    /// Step 6: looks at every worker thread inside a slice and has the scheduler
    /// retake the seat of each one blocked in a call (`blocked.rs`), then signals it
    /// so that its process stops at the first instruction after the call. True if a
    /// seat was retaken (the next worker's process may block too) or a thread may be
    /// blocking: the ticker then looks again within half `threshold`.
    fn hand_off_blocked(&self, now: Instant, threshold: Duration) -> bool {
        let slots: Vec<Arc<Slot>> = lock(&self.slots).clone();
        let mut watching = false;
        for slot in &slots {
            let Some(probe) = &slot.probe else { continue };
            let sequence = slot.sequence.load(Ordering::SeqCst);
            let mut watch = lock(&slot.watch);
            if !in_slice(sequence) {
                *watch = Watch::default();
                continue;
            }
            match watch.look(probe, now, threshold) {
                Verdict::Blocked(observed)
                    if !self.stop.load(Ordering::SeqCst) && probe.retake(observed) =>
                {
                    slot.signal(sequence);
                    watching = true;
                }
                Verdict::Waiting => watching = true,
                _ => {}
            }
        }
        watching
    }

    /// Waits for the next tick: one slice length after `last` (half of one when
    /// hurried, step 5), or sooner, every half `threshold` until `quick_until`, for a look
    /// at blocked workers only (step 6); `None` if the runtime stops first.
    fn wait_tick(&self, last: Instant, quick_until: Instant, threshold: Duration) -> Option<Wake> {
        let deadline = last + self.slice;
        let early = last + self.slice / 2;
        let start = Instant::now();
        let quick = (start < quick_until).then(|| start + threshold / 2);
        let mut guard = lock(&self.lock);
        loop {
            // ORDERING: under `lock`: pairs with the store in `Preemptor`'s drop, made
            // before it takes `lock` to notify.
            if self.stop.load(Ordering::SeqCst) {
                return None;
            }
            let now = Instant::now();
            // ORDERING: pairs with `Hurry::hurry`'s store, made before it takes `lock`.
            let hurried = self.hurried.load(Ordering::SeqCst);
            if now >= deadline || (hurried && now >= early) {
                // ORDERING: under `lock`: a `hurry` after this sets it again and then takes
                // `lock` to notify, so it is not lost; pairs with that swap.
                self.hurried.store(false, Ordering::SeqCst);
                return Some(Wake::Tick(hurried && now < deadline));
            }
            if quick.is_some_and(|quick| now >= quick) {
                return Some(Wake::Look);
            }
            let tick = if hurried { early } else { deadline };
            let until = quick.map_or(tick, |quick| quick.min(tick));
            guard = self
                .changed
                .wait_timeout(guard, until - now)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }

    /// Waits until a worker enters a slice (or the runtime stops).
    fn sleep_until_busy(&self) {
        // ORDERING: the ticker's half of a store-then-load pair: store `asleep`, then load
        // every slot's sequence; a worker entering a slice bumps its sequence, then loads
        // `asleep` (`Slice::enter`). All SeqCst: the ticker sees the slice, or the worker
        // sees `asleep` and wakes it (no lost wake-up).
        self.asleep.store(true, Ordering::SeqCst);
        let busy = lock(&self.slots)
            .iter()
            // ORDERING: the load half of the ticker's pair (see the `asleep` store above).
            .any(|slot| in_slice(slot.sequence.load(Ordering::SeqCst)));
        let mut guard = lock(&self.lock);
        if busy {
            // ORDERING: under `lock`; only a hint to workers (one that still reads `true`
            // calls `wake_ticker` once more, which is harmless).
            self.asleep.store(false, Ordering::SeqCst);
            return;
        }
        // ORDERING: under `lock`, as `wake_ticker`'s store of `asleep` and the drop's
        // notification: the lock orders them; SeqCst is stronger than needed.
        while self.asleep.load(Ordering::SeqCst) && !self.stop.load(Ordering::SeqCst) {
            guard = self
                .changed
                .wait(guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    #[cold]
    fn wake_ticker(&self) {
        let _guard = lock(&self.lock);
        // ORDERING: under `lock`: pairs with the ticker's load in `sleep_until_busy`, under
        // the same lock.
        self.asleep.store(false, Ordering::SeqCst);
        self.changed.notify_one();
    }
}

/// Why the ticker woke.
enum Wake {
    /// A tick (steps 2 and 6); early if hurried (step 5).
    Tick(bool),
    /// A look for blocked workers only (step 6), between ticks.
    Look,
}

impl Slot {
    /// Whether an overrunning slice needs another signal: not while its thread sleeps
    /// in a call whose seat was retaken (step 6), as `asleep_at` (the thread's CPU
    /// clock at the previous check, kept by the ticker) shows; once the call returns
    /// and the thread computes, it is signalled again.
    fn overrun_signal_needed(&self, asleep_at: &mut Option<CpuReading>, now: Instant) -> bool {
        self.probe
            .as_ref()
            .is_none_or(|probe| !probe.sleeps_after_hand_off(asleep_at, now))
    }

    /// Asks the worker to stop the slice whose sequence is `sequence` (steps 2, 3).
    fn signal(&self, sequence: u64) {
        // ORDERING: read by the signal handler on the worker (Relaxed,
        // async-signal-safe) after the `pthread_kill` below: the system call orders
        // the store before the signal's delivery; the handler's Relaxed load pairs
        // with no ordering of this store, so SeqCst adds nothing here.
        self.target.store(sequence, Ordering::SeqCst);
        // SAFETY: `self.thread` is a worker of this runtime, alive while the ticker
        // runs (see the module's invariants).
        unsafe { libc::pthread_kill(self.thread, PREEMPT_SIGNAL) };
    }
}

/// A handle on a preemptor's ticker for the scheduler's outside wake-ups (step 5).
#[derive(Clone)]
pub(crate) struct Hurry(Arc<Inner>);

impl Hurry {
    /// Asks for an early tick: a task woken from outside waits for a worker. Cheap
    /// when one is asked for already, or when no worker is in a slice (an idle worker
    /// takes the task).
    pub(crate) fn hurry(&self) {
        let inner = &self.0;
        // ORDERING: `asleep` is a hint (a worker entering a slice wakes the ticker);
        // `hurried` pairs with `wait_one_slice`'s load, under `lock`.
        if inner.asleep.load(Ordering::Relaxed) || inner.hurried.swap(true, Ordering::SeqCst) {
            return;
        }
        let _guard = lock(&inner.lock);
        inner.changed.notify_one();
    }
}

/// Whether the ticker signals a slice that has overrun for `ticks` ticks: at once,
/// then after 2, 4, 8... ticks, and every 64 ticks from then on. A slice that could
/// not be stopped (inside `atomic`, inside a C function, or blocked in a system
/// call, which the signal may interrupt) is not signalled at every tick.
fn signal_now(ticks: u32) -> bool {
    (ticks.is_power_of_two() && ticks <= 64) || ticks.is_multiple_of(64)
}

/// One slice of a process on this worker: while it lives, the ticker may stop the
/// Lua thread it names, and [`slice_context`] and that thread's extra space (see
/// `state.rs`) name the process's context.
pub(crate) struct Slice<'a> {
    named: &'static SliceLocal,
    /// The main coroutine resumed (or null).
    thread: *mut lua_State,
    /// This worker's slot, when preemption is on: one of the preemptor's `slots`,
    /// which it never drops.
    slot: Option<&'a Slot>,
    /// The context named before this slice, named again when it ends.
    outer: *const ProcessContext,
}

impl<'a> Slice<'a> {
    /// Enters a slice that resumes `thread`, the main coroutine of a process's state
    /// whose app data is `context`.
    ///
    /// # Safety
    /// `thread` and `context` (or null) stay alive, and `thread`'s state runs on this
    /// thread only within this slice, until the slice is dropped.
    pub(crate) unsafe fn enter(
        preemptor: &'a Preemptor,
        thread: *mut lua_State,
        context: *const ProcessContext,
    ) -> Self {
        let named = SliceLocal::here();
        let outer = named.context.replace(context);
        if !thread.is_null() {
            // SAFETY: a live thread of a process's state, run by this slice alone.
            unsafe { state::name_context(thread, context) };
        }
        let Some(inner) = &preemptor.inner else {
            return Self {
                named,
                thread,
                slot: None,
                outer,
            };
        };
        // SAFETY: the slot is in `inner.slots` (`Preemptor::slot`), which keeps it for
        // as long as `inner` lives: `preemptor` holds `inner` and is borrowed for 'a.
        let slot = unsafe { &*preemptor.slot(inner, named) };
        named.running.store(thread, Ordering::Relaxed);
        named
            .slot
            .store(std::ptr::from_ref(slot).cast_mut(), Ordering::Relaxed);
        // ORDERING: the signal handler runs on this thread, so only the compiler could
        // reorder: `running` and `slot` are named before the sequence says the slice began.
        compiler_fence(Ordering::SeqCst);
        // ORDERING: the worker's half of the store-then-load pair with the ticker's sleep
        // (`sleep_until_busy`): bump the sequence, then load `asleep`; SeqCst on both
        // sides, so one sees the other.
        slot.sequence.fetch_add(1, Ordering::SeqCst);
        // ORDERING: the load half of the worker's pair (see the bump above).
        if inner.asleep.load(Ordering::SeqCst) {
            inner.wake_ticker();
        }
        Self {
            named,
            thread,
            slot: Some(slot),
            outer,
        }
    }
}

impl Drop for Slice<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            // ORDERING: ends the slice before `running` is cleared (the compiler fence
            // below keeps that order for the handler on this thread). No pair needs SeqCst
            // at exit: the ticker only counts overruns from it, and a signal sent for the
            // ended slice finds sequence and target differ. Only this thread writes the
            // slot's sequence (a slot belongs to one thread; the handler only reads it),
            // so a load and a store bump it as `fetch_add` would, without the locked
            // instruction that costs one per slice.
            let ended = slot.sequence.load(Ordering::Relaxed) + 1;
            slot.sequence.store(ended, Ordering::Release);
            // ORDERING: for the handler on this thread: `slot` and `running` are cleared
            // only after the sequence says the slice ended.
            compiler_fence(Ordering::SeqCst);
            self.named.slot.store(null_mut(), Ordering::Relaxed);
            self.named.running.store(null_mut(), Ordering::Relaxed);
        }
        self.named.context.set(self.outer);
        if !self.thread.is_null() {
            // SAFETY: as in `enter`; the slice no longer runs the thread.
            unsafe { state::name_context(self.thread, std::ptr::null()) };
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The program's own handler of `SIGURG`, if it had one before Lutra's (called for
/// signals not meant for Lutra), and whether it takes SA_SIGINFO's arguments.
static PREVIOUS_HANDLER: AtomicPtr<()> = AtomicPtr::new(null_mut());
static PREVIOUS_SIGINFO: AtomicBool = AtomicBool::new(false);

/// Installs the handler of [`PREEMPT_SIGNAL`] once per process.
fn install_handler() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: a zeroed sigaction is valid; `on_signal` has the SA_SIGINFO
        // signature and only does async-signal-safe work (atomics, lua_sethook).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(PREEMPT_SIGNAL, &action, &mut previous) == 0 {
                let handler = previous.sa_sigaction;
                if handler != libc::SIG_DFL && handler != libc::SIG_IGN {
                    let siginfo = previous.sa_flags & libc::SA_SIGINFO != 0;
                    // ORDERING: published by the Release store of `PREVIOUS_HANDLER`
                    // below, which `chain` loads with Acquire before it reads this.
                    PREVIOUS_SIGINFO.store(siginfo, Ordering::Relaxed);
                    // ORDERING: Release, paired with `chain`'s Acquire load: a handler
                    // that sees this handler sees its `PREVIOUS_SIGINFO` too.
                    PREVIOUS_HANDLER.store(handler as *mut (), Ordering::Release);
                }
            }
        }
    });
}

/// The signal handler (step 3).
extern "C" fn on_signal(signal: c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let saved_errno = errno();
    let named = SliceLocal::here();
    let slot = named.slot.load(Ordering::Relaxed);
    let running = named.running.load(Ordering::Relaxed);
    if slot.is_null() || running.is_null() {
        chain(signal, info, context);
    } else {
        // SAFETY: a non-null `slot` is this worker's slot, kept alive by the slice that
        // set it (it is cleared before the slice ends).
        let slot = unsafe { &*slot };
        if slot.sequence.load(Ordering::Relaxed) == slot.target.load(Ordering::Relaxed) {
            // SAFETY: `running` is a live Lua thread (module invariant) and the slice's
            // context is alive; lua_sethook may be called asynchronously (ldebug.c).
            unsafe { arm(running, named.context.get(), ARMED) };
        }
    }
    set_errno(saved_errno);
}

/// Passes a `SIGURG` that was not Lutra's to the handler installed before.
fn chain(signal: c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // ORDERING: Acquire, paired with `install_handler`'s Release store: the
    // `PREVIOUS_SIGINFO` read below is the one stored with this handler.
    let handler = PREVIOUS_HANDLER.load(Ordering::Acquire);
    if handler.is_null() {
        return;
    }
    // SAFETY: `handler` was installed for this signal by the program, with the
    // signature its SA_SIGINFO flag says.
    unsafe {
        if PREVIOUS_SIGINFO.load(Ordering::Relaxed) {
            let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(handler);
            handler(signal, info, context);
        } else {
            let handler: extern "C" fn(c_int) = std::mem::transmute(handler);
            handler(signal);
        }
    }
}

fn errno() -> c_int {
    // SAFETY: __errno_location returns this thread's errno.
    unsafe { *libc::__errno_location() }
}

fn set_errno(value: c_int) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = value }
}

/// The count the handler arms the hook with: it fires at the next instruction.
const ARMED: c_int = 1;

/// The count the hook leaves itself with when it yields: it stays set (so that the
/// resumer, mlua's `Thread::resume` among them, sees a thread suspended in a hook and
/// keeps its stack) and clears itself at its next firing, two instructions after
/// the thread resumes.
const YIELDED: c_int = 2;

/// Sets the preemption hook on `thread` with `count`, standing in for the program's
/// own hook there (`user_hook.rs`: kept, its other events handed on, put back by
/// [`disarm`]).
///
/// # Safety
/// `thread` is a live Lua thread of the process whose context is `context` (or null);
/// async-signal-safe (plain loads and stores, `lua_sethook`).
unsafe fn arm(thread: *mut lua_State, context: *const ProcessContext, count: c_int) {
    // SAFETY: the caller's contract.
    unsafe {
        let current = ffi::lua_gethook(thread);
        let ours =
            current.is_some_and(|hook| std::ptr::fn_addr_eq(hook, preempt_hook as ffi::lua_Hook));
        let user_mask = super::user_hook::keep(thread, context, !ours);
        ffi::lua_sethook(
            thread,
            Some(preempt_hook),
            ffi::LUA_MASKCOUNT | user_mask,
            count,
        );
    }
}

/// Takes the preemption hook off `state`, putting back the program's own hook.
///
/// # Safety
/// `state` is the running thread; `context` its process's context or null.
unsafe fn disarm(state: *mut lua_State, context: *const ProcessContext) {
    // SAFETY: the caller's contract.
    unsafe { super::user_hook::put_back(state, context) }
}

/// Step 7: hands the calling worker's seat to a spare thread right before a C call
/// on `state` (the running Lua thread) that is about to block, instead of a
/// threshold after it blocked (step 6): the scheduler retakes the seat of this very
/// slice, and the preemption hook is armed on `state` so that the process yields at
/// its first instruction after the call, ending the slice on this thread, which then
/// parks in the pool. Does nothing (false) outside a slice with preemption on (no
/// hook could end the slice then), on a thread not named by the slice, or when the
/// scheduler cannot hand the seat over (its bound of spare threads).
pub(crate) fn hand_off_before_blocking(state: *mut lua_State) -> bool {
    let named = SliceLocal::here();
    if named.slot.load(Ordering::Relaxed).is_null()
        || named.running.load(Ordering::Relaxed) != state
    {
        return false;
    }
    let Some(carrier) = lutra_sched::current_carrier() else {
        return false;
    };
    let Some(observed) = carrier.observe() else {
        return false;
    };
    if !carrier.retake(observed) {
        return false;
    }
    // SAFETY: `state` is the thread the slice names (checked above): live, running on
    // this thread, with the slice's context.
    unsafe { arm(state, named.context.get(), ARMED) };
    true
}

/// The count hook the handler sets (step 4), which also stops a cancelled process
/// (`cancel.rs`) and hands other events on to the program's own hook.
unsafe extern "C-unwind" fn preempt_hook(state: *mut lua_State, debug: *mut ffi::lua_Debug) {
    // SAFETY: `state` is the running thread (Lua calls its hook on it); changing the
    // hook from inside it is allowed.
    unsafe {
        let context = slice_context();
        if (*debug).event != ffi::LUA_HOOKCOUNT {
            // After this hook's yield in the same instruction (Lua runs the count and
            // line hooks together) the thread cannot call the program's hook: that
            // one event is not handed on.
            if ffi::lua_status(state) == ffi::LUA_OK {
                super::user_hook::forward(state, debug, context);
            }
            return;
        }
        // SAFETY (deref): a non-null slice context is the app data of the process in the
        // slice, alive for the slice.
        if let Some(process) = context.as_ref()
            && process.process.cancel_interrupts()
            && super::cancel::stops_here(process, state)
        {
            disarm(state, context);
            super::cancel::raise(process, state);
        }
        let fired_after_yield = ffi::lua_gethookcount(state) == YIELDED;
        let preemptible = !fired_after_yield
            && !context.is_null()
            && !(*context).no_preempt.load(Ordering::Relaxed)
            && ffi::lua_isyieldable(state) != 0;
        if !preemptible {
            disarm(state, context);
            return;
        }
        (*context).preempted.store(true, Ordering::Relaxed);
        arm(state, context, YIELDED);
        // A count hook may yield with no values: lua_yield returns here, and Lua
        // unwinds once the hook has returned.
        ffi::lua_yield(state, 0);
    }
}

/// The native `coroutine.resume` the prelude uses: `luaB_coresume`'s contract, and the
/// coroutine is named in `running` of [`NAMED`] while it runs (step 1). A yield the
/// coroutine made for the scheduler (its preemption mark set, no values) returns
/// `true, PREEMPTED` (`api::PREEMPTED`) instead of a bare `true` (step 4).
///
/// # Safety
/// Called by Lua as a C function.
pub(crate) unsafe extern "C-unwind" fn resume(state: *mut lua_State) -> c_int {
    // SAFETY: `state` is the calling thread with its arguments on the stack; a bad
    // argument raises a Lua error (longjmp) over this frame, which owns nothing.
    unsafe {
        let coroutine = ffi::lua_tothread(state, 1);
        if coroutine.is_null() {
            return not_a_coroutine(state);
        }
        let arguments = ffi::lua_gettop(state) - 1;
        if ffi::lua_checkstack(coroutine, arguments) == 0 {
            return resume_failed(state, c"too many arguments to resume");
        }
        ffi::lua_xmove(state, coroutine, arguments);
        let mut results: c_int = 0;
        let named = SliceLocal::here();
        // A mark left by a coroutine resumed from C (not through here) is not this
        // coroutine's.
        let context = named.context.get().as_ref();
        if let Some(context) = context {
            context.preempted.store(false, Ordering::Relaxed);
        }
        let outer = named.running.swap(coroutine, Ordering::Relaxed);
        // ORDERING: the signal handler runs on this thread, so only the compiler could
        // reorder: the coroutine is named in `running` before it runs.
        compiler_fence(Ordering::SeqCst);
        let status = ffi::lua_resume(coroutine, state, arguments, &mut results);
        // ORDERING: for the handler on this thread: the outer thread is named again only
        // after the coroutine stopped running.
        compiler_fence(Ordering::SeqCst);
        named.running.store(outer, Ordering::Relaxed);
        if status == ffi::LUA_YIELD
            && results == 0
            && context.is_some_and(|context| context.preempted.swap(false, Ordering::Relaxed))
        {
            // The coroutine yielded for the scheduler: said before any Lua code runs
            // on this thread again (a preemption there would consume the mark).
            ffi::lua_pushboolean(state, 1);
            ffi::lua_pushlightuserdata(state, crate::api::PREEMPTED);
            return 2;
        }
        if status == ffi::LUA_OK || status == ffi::LUA_YIELD {
            if ffi::lua_checkstack(state, results + 1) == 0 {
                ffi::lua_pop(coroutine, results);
                return resume_failed(state, c"too many results to resume");
            }
            ffi::lua_pushboolean(state, 1);
            ffi::lua_xmove(coroutine, state, results);
            results + 1
        } else {
            ffi::lua_pushboolean(state, 0);
            ffi::lua_xmove(coroutine, state, 1);
            2
        }
    }
}

/// Raises `bad argument #1 to 'resume' (coroutine expected, got T)`, as the stock
/// `coroutine.resume` does.
///
/// # Safety
/// `state` is the thread running [`resume`]; this longjmps over its caller's frame.
unsafe fn not_a_coroutine(state: *mut lua_State) -> c_int {
    // SAFETY: the caller's thread; the message is copied into Lua (and the Rust string
    // dropped) before the error is raised.
    unsafe {
        let message = {
            let got = std::ffi::CStr::from_ptr(ffi::luaL_typename(state, 1)).to_string_lossy();
            std::ffi::CString::new(format!("coroutine expected, got {got}")).unwrap_or_default()
        };
        ffi::lua_pushstring(state, message.as_ptr());
        drop(message);
        ffi::luaL_argerror(state, 1, ffi::lua_tostring(state, -1))
    }
}

/// `false, message` from [`resume`].
///
/// # Safety
/// `state` is the thread running [`resume`].
unsafe fn resume_failed(state: *mut lua_State, message: &std::ffi::CStr) -> c_int {
    // SAFETY: the caller's thread, with room for two values.
    unsafe {
        ffi::lua_pushboolean(state, 0);
        ffi::lua_pushstring(state, message.as_ptr());
    }
    2
}

#[cfg(test)]
mod tests {
    use super::{Preemptor, Slice, signal_now};
    use std::time::{Duration, Instant};

    #[test]
    fn a_stopping_preemptor_does_not_wait_out_the_slice() {
        let preemptor = Preemptor::new(Duration::from_secs(30));
        // SAFETY: no Lua thread is named (null): the slice only starts the ticker.
        drop(unsafe { Slice::enter(&preemptor, std::ptr::null_mut(), std::ptr::null()) });
        std::thread::sleep(Duration::from_millis(20));
        let start = Instant::now();
        drop(preemptor);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn an_overrunning_slice_is_signalled_less_and_less_often() {
        let signalled: Vec<u32> = (1..=200).filter(|&ticks| signal_now(ticks)).collect();
        assert_eq!(signalled, [1, 2, 4, 8, 16, 32, 64, 128, 192]);
    }
}
