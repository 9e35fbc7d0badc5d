//! The Lua runtime: the scheduler whose workers resume processes, the process table,
//! the counters the deadlock detector reads, the timer, and line-atomic output.
//!
//! # Invariants
//! - `live` counts processes spawned and not finished.
//! - `liveness` counts what can still make progress (see `liveness.rs`): each process
//!   from its spawn to the end of `note_finished`, except while it is parked with no
//!   wake-up pending; each host state (module mode) except while its thread is
//!   blocked with no wake-up pending; each pending timer.
//! - Every waker given to a channel, a timer, a joiner list or a transaction's watch
//!   comes from [`wakers::current_waker`], so that every wake-up is counted.
//!
//! # Deadlock detection
//! `liveness` reads zero while processes are alive: every one of them is parked, no
//! wake-up is pending, no timer is pending, no host can act. That is proof, not a guess
//! from timing: a stalled machine delays the report of nothing (a woken process that
//! the OS has not run yet counts as awake). The report lists each process and what it
//! waits on.

use crate::liveness::{Liveness, WakeState};
use crate::options::Options;
use crate::process::{Code, ProcessCore, ProcessTask};
use crate::timer::Timer;
use crate::transfer::Message;
use crate::wakers;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How often the waiting side looks for a deadlock.
const DEADLOCK_CHECK: Duration = Duration::from_millis(100);

/// Who learns of a new process's end from before its first slice: nobody, the
/// spawner as a linked process (`lutra.spawn_link`) or as a monitor
/// (`lutra.spawn_monitor`), so that no end, however early, escapes it.
#[derive(Clone, Copy)]
pub(crate) enum Watched<'a> {
    Not,
    LinkedWith(&'a Arc<ProcessCore>),
    MonitoredBy(&'a Arc<ProcessCore>),
}

pub(crate) struct RuntimeShared {
    /// Declared before `sched`: its ticker stops before the workers go away.
    pub(crate) preemptor: crate::process::preempt::Preemptor,
    pub(crate) sched: lutra_sched::Runtime,
    pub(crate) options: Options,
    pub(crate) timer: Timer,
    /// Wakes processes parked reading `io.popen` pipes.
    pub(crate) readiness: crate::readiness::Readiness,
    next_pid: AtomicU64,
    processes: Mutex<BTreeMap<u64, Arc<ProcessCore>>>,
    failures: Mutex<Vec<Arc<ProcessCore>>>,
    /// The id of the main script's process (`spawn_script`), 0 if none.
    main_pid: AtomicU64,
    /// The last deadlock report raised in a host's blocking call (module mode).
    host_deadlock: Mutex<Option<String>>,
    live: AtomicUsize,
    /// What can still make progress: the deadlock detector's proof.
    liveness: Arc<Liveness>,
    /// Test hook: how long a worker stalls after a process parks (a machine that does
    /// not run the workers), to show that no stall makes a false deadlock report.
    #[cfg(test)]
    stall_after_park: Option<Duration>,
    /// Notified when the last live process finishes: what [`LuaRuntime::wait`] waits
    /// for (it looks for deadlocks on its own clock, every `DEADLOCK_CHECK`).
    finished: Condvar,
    finished_lock: Mutex<()>,
    output: Mutex<()>,
    /// Processes, messages: what `--stats` reports.
    pub(crate) counters: crate::stats::Counters,
    /// luaproc's named channels.
    pub(crate) named_channels: crate::channel::Registry,
    /// Finished states kept for reuse (luaproc's `recycle` changes it at run time).
    pub(crate) recycle_limit: AtomicUsize,
    /// Finished states reset and ready for new processes.
    pub(crate) states: crate::process::StatePool,
    /// Callers of `wait_poll` (luaproc's `wait`), woken whenever a process finishes.
    all_finished_waiters: Mutex<crate::channel::WaitList>,
    /// The engine of user transactions (shared tables, `lutra.atomic`).
    pub(crate) tm: Arc<crate::atomic::Engine>,
}

impl RuntimeShared {
    /// Spawns a process running `code` with the arguments in `args`, linked with or
    /// monitored by the spawner before it starts, as `watched` says.
    pub(crate) fn spawn_watched(
        self: &Arc<Self>,
        code: Code,
        args: Message,
        origin: String,
        watched: Watched<'_>,
    ) -> Arc<ProcessCore> {
        let (core, task) = self.register(code, args, origin, watched);
        self.start(core.id(), task);
        core
    }

    /// Spawns the main script's process (unwatched, as [`Self::spawn_watched`]). It is
    /// named the main process before it can run: a script that fails in its first
    /// slice is then reported as the main script (`lutra: <error>`), not as
    /// `process#N`.
    pub(crate) fn spawn_main(
        self: &Arc<Self>,
        code: Code,
        args: Message,
        origin: String,
    ) -> Arc<ProcessCore> {
        let (core, task) = self.register(code, args, origin, Watched::Not);
        // ORDERING: stored before the task is handed to the scheduler, whose run
        // queue publishes it to the worker that runs it (and, on failure, reads
        // `main_pid` in `report_failure`).
        self.main_pid.store(core.id(), Ordering::SeqCst);
        self.start(core.id(), task);
        core
    }

    /// Counts a new process (linked or monitored as `watched` says) and answers it with the task
    /// that will run it; nothing runs until [`Self::start`].
    fn register(
        self: &Arc<Self>,
        code: Code,
        args: Message,
        origin: String,
        watched: Watched<'_>,
    ) -> (Arc<ProcessCore>, ProcessTask) {
        let id = self.next_pid.fetch_add(1, Ordering::Relaxed);
        let core = Arc::new(ProcessCore::new(id, origin, self.options.mailbox_capacity));
        match watched {
            Watched::Not => {}
            Watched::LinkedWith(spawner) => core.link(spawner),
            Watched::MonitoredBy(spawner) => core.add_monitor(spawner),
        }
        self.lock_processes().insert(id, core.clone());
        // ORDERING: counted before the process can run (its task reaches the run queue
        // later, in `start`) and before `liveness.add`. SeqCst: one order with `liveness`'s
        // SeqCst accesses, which `wait` reads first (see there).
        self.live.fetch_add(1, Ordering::SeqCst);
        self.liveness.add();
        self.counters.note_spawned();
        let task = ProcessTask::new(self.clone(), core.clone(), code, args);
        (core, task)
    }

    /// Hands process `id`'s task to the scheduler: from here on it may run.
    fn start(&self, id: u64, task: ProcessTask) {
        self.sched
            .task()
            .name(format!("process#{id}"))
            .spawn_resumable(Box::new(task));
    }

    fn lock_processes(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<ProcessCore>>> {
        self.processes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Called by a process task at the start of every slice (`was_parked`: its last
    /// slice ended in `Park`), with its place in the wake-up protocol (see
    /// `wakers::process_resumed`).
    pub(crate) fn note_resumed(&self, was_parked: bool, place: &mut Option<Arc<WakeState>>) {
        wakers::process_resumed(&self.liveness, was_parked, place);
    }

    /// Called by a process task whose slice ended in `Park`, after its registrations.
    pub(crate) fn note_parked(&self, place: Option<&Arc<WakeState>>) {
        wakers::process_parked(place);
        #[cfg(test)]
        if let Some(stall) = self.stall_after_park {
            std::thread::sleep(stall);
        }
    }

    /// Called once per process, when it has finished (either way).
    pub(crate) fn note_finished(&self, core: &Arc<ProcessCore>) {
        self.lock_processes().remove(&core.id());
        if let Some(error) = core.claim_report() {
            self.report_failure(core, &error);
        }
        if core.failed_unjoined().is_some() {
            self.failures
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(core.clone());
        }
        let guard = self.finished_lock.lock().unwrap_or_else(|p| p.into_inner());
        // ORDERING: under `finished_lock`, which `wait` holds while it reads `live` and
        // waits on `finished`: the lock orders the two, so the notification is not lost.
        // SeqCst as at the increment.
        if self.live.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.finished.notify_all();
        }
        drop(guard);
        self.lock_all_finished_waiters().wake_all();
        // Last: until here this process could still wake others.
        self.liveness.remove();
    }

    fn lock_all_finished_waiters(&self) -> MutexGuard<'_, crate::channel::WaitList> {
        self.all_finished_waiters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Whether every process other than the caller (`caller_is_process`: the caller is
    /// itself a live process) has finished; registers `waiter` if not.
    pub(crate) fn poll_all_finished(
        &self,
        caller_is_process: bool,
        waiter: Option<crate::channel::Waiter>,
    ) -> bool {
        let mut waiters = self.lock_all_finished_waiters();
        let others = self
            .live
            // ORDERING: under the waiters' lock: a finishing process decrements `live`,
            // then takes the same lock to wake the waiters, so this read sees the decrement
            // or the waiter registered here is woken. The lock orders it; SeqCst as every
            // access of `live`.
            .load(Ordering::SeqCst)
            .saturating_sub(usize::from(caller_is_process));
        if others == 0 {
            return true;
        }
        if let Some(waiter) = waiter {
            waiters.register(waiter);
        }
        false
    }

    /// Counts a host state opened on the calling OS thread (module mode): the thread
    /// can wake processes until its last host state closes.
    pub(crate) fn open_host(&self) {
        wakers::host_opened(&self.liveness);
    }

    /// A host state of the calling thread closed (see [`Self::open_host`]).
    pub(crate) fn close_host(&self) {
        wakers::host_closed(&self.liveness);
    }

    /// Parks the calling host thread until it is woken or `timeout` passes. Returns
    /// the deadlock report when nothing can ever wake it (proof, see the module).
    pub(crate) fn park_host(&self, timeout: Duration) -> Option<String> {
        wakers::park_host(&self.liveness, timeout).then(|| self.deadlock_report())
    }

    /// Reports on standard error that `core` failed with `error`, between whole
    /// lines of output: `lutra: <error>` for the main script, `lutra: process#N
    /// (origin) failed: <error>` for the others.
    pub(crate) fn report_failure(&self, core: &ProcessCore, error: &str) {
        let _guard = self.output.lock().unwrap_or_else(|p| p.into_inner());
        flush_c_stdio();
        let _ = std::io::stdout().lock().flush();
        // ORDERING: pairs with the store in `spawn_main`, made before the main process's
        // task reached the run queue: a report comes after that task ran, so it sees the
        // id.
        if core.id() == self.main_pid.load(Ordering::SeqCst) {
            eprintln!("lutra: {error}");
        } else {
            eprintln!(
                "lutra: process#{} ({}) failed: {error}",
                core.id(),
                core.origin()
            );
        }
    }

    /// Remembers the deadlock report a host's blocking call raised, so that the
    /// host's end does not print the same report again.
    pub(crate) fn note_host_deadlock(&self, report: &str) {
        *self.host_deadlock.lock().unwrap_or_else(|p| p.into_inner()) = Some(report.to_owned());
    }

    /// Whether `report` is the last one a host's blocking call raised.
    pub(crate) fn host_saw_deadlock(&self, report: &str) -> bool {
        self.host_deadlock
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_deref()
            == Some(report)
    }

    /// Writes `line` to standard output in one piece (lines of processes never mix).
    pub(crate) fn write_line(&self, line: &[u8]) {
        let _guard = self.output.lock().unwrap_or_else(|p| p.into_inner());
        // `io.write` buffers in C's stdio: what it wrote before this line goes out
        // first, so a process's output keeps its program order.
        flush_c_stdio();
        let mut out = std::io::stdout().lock();
        // Output errors (a closed pipe) are not the process's fault; they are dropped
        // as `print` in stock Lua drops them.
        let _ = out.write_all(line).and_then(|()| out.flush());
    }

    /// `os.exit(status)` in a process: ends the program at once with `status`, after
    /// writing out what processes printed and reporting the processes that failed and
    /// that nobody joined (as a normal end does). The other processes are stopped
    /// wherever they are (luaproc's `os.exit` ends the OS process too). Holding the
    /// output lock, so no line is cut.
    pub(crate) fn exit_now(&self, status: i32) -> ! {
        let _output = self.output.lock().unwrap_or_else(|p| p.into_inner());
        let _ = std::io::stdout().lock().flush();
        let failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let mut stderr = std::io::stderr().lock();
        for process in failures.iter().filter(|process| !process.was_reported()) {
            if let Some(error) = process.failed_unjoined() {
                let _ = writeln!(
                    stderr,
                    "lutra: process#{} ({}) failed: {error}",
                    process.id(),
                    process.origin()
                );
            }
        }
        let _ = stderr.flush();
        // `exit` also flushes C's stdio buffers (`io.write`).
        std::process::exit(status)
    }

    fn deadlock_report(&self) -> String {
        let mut report =
            String::from("deadlock: every process is blocked and nothing can wake them\n");
        for process in self.lock_processes().values() {
            let what = process
                .waiting_on()
                .unwrap_or_else(|| "an unknown event".into());
            report.push_str(&format!(
                "  process#{} ({}) waits on {}\n",
                process.id(),
                process.origin(),
                what
            ));
        }
        report
    }
}

/// How [`LuaRuntime::wait`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitOutcome {
    /// Every process finished.
    AllFinished,
    /// Every remaining process is blocked for good; the report says on what.
    Deadlock(String),
}

/// Runs Lua processes on the scheduler's workers.
///
/// ```
/// let runtime = lutra_lua::LuaRuntime::new(lutra_lua::Options::default());
/// let main = runtime.spawn_source("=example", "local p = lutra.spawn(function(n) return n * 2 end, 21)\nassert(p:join() == 42)");
/// assert_eq!(runtime.wait(), lutra_lua::WaitOutcome::AllFinished);
/// assert!(matches!(main.outcome(), lutra_lua::Outcome::Finished(_)));
/// ```
pub struct LuaRuntime {
    shared: Arc<RuntimeShared>,
}

impl LuaRuntime {
    /// Starts the workers.
    ///
    /// # Panics
    /// When the OS refuses to start a worker thread.
    pub fn new(options: Options) -> Self {
        // More workers than cores only when asked for (`-w`, luaproc's `setnumworkers`).
        let mut builder = lutra_sched::Runtime::builder()
            .allow_more_workers_than_cores()
            .max_blocking_threads(options.max_blocking_threads);
        if let Some(workers) = options.workers {
            builder = builder.workers(workers.clamp(1, crate::options::MAX_WORKERS));
        }
        let preemptor = crate::process::preempt::Preemptor::new(Duration::from_millis(u64::from(
            options.preempt_slice_ms,
        )));
        // A task woken by a timer or a host waits at most about a slice and a half
        // for a busy worker (`preempt.rs`, step 5).
        if let Some(hurry) = preemptor.hurry() {
            builder =
                builder.on_outside_wake(lutra_sched::OutsideWake(Arc::new(move || hurry.hurry())));
        }
        let recycle_limit = AtomicUsize::new(options.recycle_limit);
        let liveness = Arc::new(Liveness::default());
        let sched = builder
            .sync(match options.sync {
                crate::options::SyncMode::Locks => lutra_sched::sync_mode::SyncMode::Locks,
                crate::options::SyncMode::Tm => lutra_sched::sync_mode::SyncMode::Transactions,
            })
            .build();
        let named_channels = crate::channel::Registry::new(sched.sync_domain());
        let tm = Arc::new(crate::atomic::Engine::new(&options, sched.workers()));
        let counters = crate::stats::Counters::new(options.count_messages);
        let shared = Arc::new(RuntimeShared {
            preemptor,
            sched,
            options,
            timer: Timer::new(liveness.clone()),
            readiness: crate::readiness::Readiness::new(liveness.clone()),
            next_pid: AtomicU64::new(1),
            processes: Mutex::new(BTreeMap::new()),
            failures: Mutex::new(Vec::new()),
            main_pid: AtomicU64::new(0),
            host_deadlock: Mutex::new(None),
            live: AtomicUsize::new(0),
            liveness,
            #[cfg(test)]
            stall_after_park: None,
            finished: Condvar::new(),
            finished_lock: Mutex::new(()),
            output: Mutex::new(()),
            counters,
            named_channels,
            recycle_limit,
            states: crate::process::StatePool::default(),
            all_finished_waiters: Mutex::new(crate::channel::WaitList::default()),
            tm,
        });
        Self { shared }
    }

    /// The state shared with processes (module mode installs host contexts with it).
    pub(crate) fn shared(&self) -> &Arc<RuntimeShared> {
        &self.shared
    }

    /// Spawns a process running the Lua chunk `source`; `name` is its chunk name
    /// (`@file.lua` for a file, `=label` for a label), shown in errors.
    pub fn spawn_source(&self, name: &str, source: &str) -> Arc<ProcessCore> {
        self.spawn_script(name, source.as_bytes().to_vec(), Vec::new())
    }

    /// Spawns a process running the chunk `source` with the global `arg` set as the
    /// stock `lua` program sets it (`arg[0]` the script, `arg[1..]` `args`) and `...`
    /// bound to `args`.
    pub fn spawn_script(&self, name: &str, source: Vec<u8>, args: Vec<String>) -> Arc<ProcessCore> {
        let origin = name.trim_start_matches(['@', '=']).to_owned();
        self.spawn_main(name, origin, source, args)
    }

    /// [`spawn_script`](Self::spawn_script) with the process's origin (what reports
    /// name it by: `process#1 (origin)`) given apart from the chunk's name: the
    /// `lutra` program runs the script through a driver chunk of its own.
    pub fn spawn_main(
        &self,
        name: &str,
        origin: String,
        source: Vec<u8>,
        args: Vec<String>,
    ) -> Arc<ProcessCore> {
        let code = Code::Script {
            name: name.to_owned(),
            text: source,
            args: args.clone(),
        };
        let values: crate::transfer::Values = args
            .into_iter()
            .map(|a| crate::transfer::Value::String(a.as_bytes().into()))
            .collect();
        self.shared.spawn_main(code, Message::of(values), origin)
    }

    /// Waits until every process has finished, or reports a deadlock (only when it is
    /// proven, see the module header).
    pub fn wait(&self) -> WaitOutcome {
        let shared = &self.shared;
        let mut guard = shared
            .finished_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        loop {
            // ORDERING: `nothing_awake` first: once it reads true nothing changes any
            // more, so `live` read after it belongs to the same still state.
            let stuck = shared.liveness.nothing_awake();
            if shared.live.load(Ordering::SeqCst) == 0 {
                return WaitOutcome::AllFinished;
            }
            if stuck {
                drop(guard);
                return WaitOutcome::Deadlock(shared.deadlock_report());
            }
            guard = shared
                .finished
                .wait_timeout(guard, DEADLOCK_CHECK)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Processes made runnable by a wake-up so far (the scheduler's count of parked
    /// tasks woken). Any time; for tests, which count the receivers a message woke.
    #[doc(hidden)]
    pub fn task_unparks(&self) -> u64 {
        self.shared.sched.unparks()
    }

    /// Processes spawned and messages sent and received so far (see `lutra --stats`;
    /// messages are counted only with [`Options::count_messages`](crate::Options::count_messages)).
    pub fn stats(&self) -> crate::stats::RuntimeStats {
        let mut stats = self.shared.counters.snapshot();
        stats.transactions = Some(self.shared.tm.stm.stats());
        stats.blocking_handoffs = self.shared.sched.blocking_handoffs();
        stats.blocking_threads = self.shared.sched.blocking_threads_started();
        stats
    }

    /// Commits, aborts (by reason), retry waits and irrevocable commits of the user
    /// transactions so far, per site: each function given to `lutra.atomic` (named
    /// `file.lua:line`) and the shared-table accesses made outside `atomic`.
    pub fn transaction_stats(&self) -> crate::atomic::TransactionStats {
        self.shared.tm.stats()
    }

    /// Closes the pooled states (finished processes' states kept for reuse) for a
    /// program that is about to end (the `lutra` program calls it last): the
    /// finalizers still pending in them run, as when the runtime is dropped, but
    /// their memory is left for the OS to take back at once instead of being freed
    /// object by object (see `process/pool.rs`). Answers how many states were closed.
    /// States of processes still alive are untouched. A runtime used further builds
    /// new states, and pools them again.
    ///
    /// The closed states' memory stays taken until the OS process ends: a program
    /// that goes on after this should not call it.
    pub fn close_pool_for_exit(&self) -> usize {
        self.shared.states.close_for_exit()
    }

    /// The processes that failed and that nobody joined, with their errors.
    pub fn unjoined_failures(&self) -> Vec<(Arc<ProcessCore>, String)> {
        self.shared
            .failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(|p| p.failed_unjoined().map(|e| (p.clone(), e)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A runtime of one worker that stalls for `stall` after every park: a machine
    /// that does not run the workers while processes are woken.
    fn stalling_runtime(stall: Duration) -> LuaRuntime {
        let mut runtime = LuaRuntime::new(Options {
            workers: Some(1),
            ..Options::default()
        });
        Arc::get_mut(&mut runtime.shared)
            .expect("no process holds the runtime yet")
            .stall_after_park = Some(stall);
        runtime
    }

    /// A healthy ping-pong whose woken processes are not run for
    /// 300 ms at a time (three deadlock checks) is not reported as a deadlock.
    #[test]
    fn a_stalled_worker_is_no_deadlock() {
        let runtime = stalling_runtime(Duration::from_millis(300));
        let main = runtime.spawn_source(
            "=pingpong",
            r#"
            local ping, pong = lutra.channel(), lutra.channel()
            lutra.spawn(function(ping, pong)
              for i = 1, 4 do pong:send(ping:receive() + 1) end
            end, ping, pong)
            local n = 0
            for _ = 1, 4 do ping:send(n) n = pong:receive() end
            assert(n == 4, n)
            "#,
        );
        assert_eq!(runtime.wait(), WaitOutcome::AllFinished);
        assert!(
            matches!(main.outcome(), crate::Outcome::Finished(_)),
            "{:?}",
            main.outcome()
        );
    }

    /// The same stall does not hide a real deadlock, and a sleeper is no deadlock.
    #[test]
    fn a_stalled_worker_still_sees_real_deadlocks() {
        let runtime = stalling_runtime(Duration::from_millis(50));
        runtime.spawn_source(
            "=stuck",
            r#"
            lutra.sleep(0.2)
            local ch = lutra.channel()
            lutra.spawn(function(ch) ch:receive() end, ch)
            ch:receive()
            "#,
        );
        match runtime.wait() {
            WaitOutcome::Deadlock(report) => assert!(report.contains("receive on"), "{report}"),
            other => panic!("expected a deadlock, got {other:?}"),
        }
    }
}

unsafe extern "C" {
    /// C's `fflush`: with a null stream, flushes every output stream of C's stdio.
    fn fflush(stream: *mut std::ffi::c_void) -> std::ffi::c_int;
}

/// Writes out what Lua's `io` library (C's stdio) has buffered.
fn flush_c_stdio() {
    // SAFETY: `fflush(NULL)` is defined for any state of the streams; stdio locks each
    // stream it flushes.
    unsafe { fflush(std::ptr::null_mut()) };
}
