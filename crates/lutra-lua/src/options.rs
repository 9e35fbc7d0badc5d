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
    /// Lua VM instructions a process runs before it is preempted (outside `atomic`).
    pub preempt_instructions: u32,
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
        }
    }
}
