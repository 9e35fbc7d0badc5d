//! The Lua runtime: the scheduler whose workers resume processes, the process table,
//! the counters the deadlock detector reads, the timer, and line-atomic output.
//!
//! # Invariants
//! - `live` counts processes spawned and not finished; `parked` those of them whose
//!   last slice ended in `Park` and that have not been resumed since.
//! - `activity` grows at every slice: two looks at the counters with the same
//!   `activity` saw nothing run in between.
//!
//! # Deadlock detection
//! Every live process parked, no timer pending, no host thread blocked, and no slice
//! run between two looks 100 ms apart: nothing can wake anyone. The report lists each
//! process and what it waits on.

use crate::options::Options;
use crate::process::{Code, ProcessCore, ProcessTask};
use crate::timer::Timer;
use crate::transfer::Message;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How often the waiting side looks for a deadlock.
const DEADLOCK_CHECK: Duration = Duration::from_millis(100);

pub(crate) struct RuntimeShared {
    pub(crate) sched: lutra_sched::Runtime,
    pub(crate) options: Options,
    pub(crate) timer: Timer,
    next_pid: AtomicU64,
    processes: Mutex<BTreeMap<u64, Arc<ProcessCore>>>,
    failures: Mutex<Vec<Arc<ProcessCore>>>,
    live: AtomicUsize,
    parked: AtomicUsize,
    /// Host threads (not processes) blocked in a channel operation.
    blocked_hosts: AtomicUsize,
    activity: AtomicU64,
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
    /// Spawns a process running `code` with the arguments in `args`.
    pub(crate) fn spawn(
        self: &Arc<Self>,
        code: Code,
        args: Message,
        origin: String,
    ) -> Arc<ProcessCore> {
        let id = self.next_pid.fetch_add(1, Ordering::Relaxed);
        let core = Arc::new(ProcessCore::new(id, origin, self.options.mailbox_capacity));
        self.lock_processes().insert(id, core.clone());
        self.live.fetch_add(1, Ordering::SeqCst);
        self.counters.note_spawned();
        let task = ProcessTask::new(self.clone(), core.clone(), code, args);
        self.sched
            .task()
            .name(format!("process#{id}"))
            .spawn_resumable(Box::new(task));
        core
    }

    fn lock_processes(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<ProcessCore>>> {
        self.processes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Called by a process task at the start of every slice.
    pub(crate) fn note_resumed(&self, was_parked: bool) {
        if was_parked {
            self.parked.fetch_sub(1, Ordering::SeqCst);
        }
        self.activity.fetch_add(1, Ordering::SeqCst);
    }

    /// Called by a process task whose slice ended in `Park`.
    pub(crate) fn note_parked(&self) {
        self.parked.fetch_add(1, Ordering::SeqCst);
    }

    /// Called once per process, when it has finished (either way).
    pub(crate) fn note_finished(&self, core: &Arc<ProcessCore>) {
        self.lock_processes().remove(&core.id());
        if core.failed_unjoined().is_some() {
            self.failures
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(core.clone());
        }
        let _guard = self.finished_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.live.fetch_sub(1, Ordering::SeqCst);
        self.finished.notify_all();
        drop(_guard);
        self.lock_all_finished_waiters().wake_all();
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

    /// Whether a blocked host thread can be woken by nothing: every live process
    /// parked, no timer pending, no other host thread blocked. Returns the activity
    /// count to compare with a later look (as `looks_deadlocked`).
    pub(crate) fn host_looks_stuck(&self) -> Option<u64> {
        let stuck = self.parked.load(Ordering::SeqCst) == self.live.load(Ordering::SeqCst)
            && self.timer.pending() == 0
            && self.blocked_hosts.load(Ordering::SeqCst) <= 1;
        stuck.then(|| self.activity.load(Ordering::SeqCst))
    }

    /// The deadlock report, for a host thread that found itself stuck.
    pub(crate) fn host_deadlock_report(&self) -> String {
        self.deadlock_report()
    }

    /// Marks a host thread as blocked (`true`) or running again (`false`).
    pub(crate) fn note_host_blocked(&self, blocked: bool) {
        if blocked {
            self.blocked_hosts.fetch_add(1, Ordering::SeqCst);
        } else {
            self.blocked_hosts.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Writes `line` to standard output in one piece (lines of processes never mix).
    pub(crate) fn write_line(&self, line: &[u8]) {
        let _guard = self.output.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = std::io::stdout().lock();
        // Output errors (a closed pipe) are not the process's fault; they are dropped
        // as `print` in stock Lua drops them.
        let _ = out.write_all(line).and_then(|()| out.flush());
    }

    fn looks_deadlocked(&self) -> Option<u64> {
        let live = self.live.load(Ordering::SeqCst);
        let stuck = live > 0
            && self.parked.load(Ordering::SeqCst) == live
            && self.timer.pending() == 0
            && self.blocked_hosts.load(Ordering::SeqCst) == 0;
        stuck.then(|| self.activity.load(Ordering::SeqCst))
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
        let mut builder = lutra_sched::Runtime::builder().allow_more_workers_than_cores();
        if let Some(workers) = options.workers {
            builder = builder.workers(workers);
        }
        let recycle_limit = AtomicUsize::new(options.recycle_limit);
        let sched = builder
            .sync(match options.sync {
                crate::options::SyncMode::Locks => lutra_sched::sync::SyncMode::Locks,
                crate::options::SyncMode::Tm => lutra_sched::sync::SyncMode::Transactions,
            })
            .build();
        let named_channels = crate::channel::Registry::new(sched.sync_domain());
        let tm = Arc::new(crate::atomic::Engine::new(&options, sched.workers()));
        let shared = Arc::new(RuntimeShared {
            sched,
            options,
            timer: Timer::default(),
            next_pid: AtomicU64::new(1),
            processes: Mutex::new(BTreeMap::new()),
            failures: Mutex::new(Vec::new()),
            live: AtomicUsize::new(0),
            parked: AtomicUsize::new(0),
            blocked_hosts: AtomicUsize::new(0),
            activity: AtomicU64::new(0),
            finished: Condvar::new(),
            finished_lock: Mutex::new(()),
            output: Mutex::new(()),
            counters: crate::stats::Counters::default(),
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
        let code = Code::Script {
            name: name.to_owned(),
            text: source,
            args: args.clone(),
        };
        let values = args
            .into_iter()
            .map(|a| crate::transfer::Value::String(Arc::from(a.into_bytes())))
            .collect();
        let origin = name.trim_start_matches(['@', '=']).to_owned();
        self.shared.spawn(code, Message::of(values), origin)
    }

    /// Waits until every process has finished, or reports a deadlock.
    pub fn wait(&self) -> WaitOutcome {
        let shared = &self.shared;
        let mut suspect: Option<u64> = None;
        let mut guard = shared
            .finished_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        loop {
            if shared.live.load(Ordering::SeqCst) == 0 {
                return WaitOutcome::AllFinished;
            }
            let now = shared.looks_deadlocked();
            if now.is_some() && now == suspect {
                drop(guard);
                return WaitOutcome::Deadlock(shared.deadlock_report());
            }
            suspect = now;
            guard = shared
                .finished
                .wait_timeout(guard, DEADLOCK_CHECK)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Processes spawned and messages sent and received so far (see `lutra --stats`).
    pub fn stats(&self) -> crate::stats::RuntimeStats {
        let mut stats = self.shared.counters.snapshot();
        stats.transactions = Some(self.shared.tm.stm.stats());
        stats
    }

    /// Commits, aborts (by reason), retry waits and irrevocable commits of the user
    /// transactions so far, per site: each function given to `lutra.atomic` (named
    /// `file.lua:line`) and the shared-table accesses made outside `atomic`.
    pub fn transaction_stats(&self) -> crate::atomic::TransactionStats {
        self.shared.tm.stats()
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
