//! The runtime's settings (the `lutra` program's options).

/// How a [`LuaRuntime`](crate::LuaRuntime) runs processes.
#[derive(Debug, Clone)]
pub struct Options {
    /// Worker threads (default: one per core).
    pub workers: Option<usize>,
    /// Scheduling policy name for transactions (see `lutra_sched::policy::Policy`).
    pub policy: Option<String>,
    /// Contention manager name for user transactions (see `lutra_stm::cm::NAMES`).
    pub contention_manager: Option<String>,
    /// Messages a process's mailbox buffers before `p:send` waits.
    pub mailbox_capacity: usize,
    /// Per-process memory limit in bytes: a process over it fails with
    /// "not enough memory"; the others go on.
    pub memory_limit: Option<usize>,
    /// Finished Lua states kept for reuse by new processes.
    pub recycle_limit: usize,
    /// Lua VM instructions a process runs before it is preempted (outside `atomic`;
    /// 0: never).
    pub preempt_instructions: u32,
    /// How the runtime's own shared structures (run queue, channel registry, process
    /// counts, recycle list) are synchronised (`--sync`).
    pub sync: SyncMode,
}

/// How the runtime's internals are synchronised (seed 001: luaproc ported from locks
/// to transactions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum SyncMode {
    /// Mutexes and condition variables (the default).
    #[default]
    Locks,
    /// The engine's transactions, waiting with `retry` / parking, never busy-waiting.
    Tm,
}

impl SyncMode {
    /// Every mode, in the order `--help` lists them.
    pub const ALL: [SyncMode; 2] = [Self::Locks, Self::Tm];

    /// The mode's name, as [`SyncMode::from_name`] accepts it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Locks => "locks",
            Self::Tm => "tm",
        }
    }

    /// The mode called `name` (`locks`/`lock`, `tm`/`stm`/`transactions`), or `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "locks" | "lock" => Some(Self::Locks),
            "tm" | "stm" | "transactions" => Some(Self::Tm),
            _ => None,
        }
    }
}

impl std::fmt::Display for SyncMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

impl std::str::FromStr for SyncMode {
    type Err = String;

    /// As [`SyncMode::from_name`]; the error lists the accepted names.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::from_name(name)
            .ok_or_else(|| format!("unknown sync mode '{name}' (expected one of: locks, tm)"))
    }
}

impl Default for Options {
    fn default() -> Self {
        Self {
            workers: None,
            policy: None,
            contention_manager: None,
            mailbox_capacity: 1024,
            memory_limit: None,
            recycle_limit: 64,
            preempt_instructions: 100_000,
            sync: SyncMode::Locks,
        }
    }
}
