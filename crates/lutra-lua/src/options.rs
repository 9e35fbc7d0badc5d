//! The runtime's settings (the `lutra` program's options), and the one parser of
//! each setting's text, shared by the command line and the environment
//! (`LUTRA_WORKERS`...): a value is accepted or refused the same way wherever it comes
//! from.

/// How a [`LuaRuntime`](crate::LuaRuntime) runs processes.
#[derive(Debug, Clone)]
pub struct Options {
    /// Worker threads (default: one per core); at most [`MAX_WORKERS`] (a larger
    /// count is lowered to it by `LuaRuntime::new`).
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
    /// Milliseconds a process runs without yielding before it is preempted (outside
    /// `atomic`; 0: never). A process that yields sooner pays nothing for it.
    pub preempt_slice_ms: u32,
    /// How the runtime's own shared structures (run queue, channel registry, process
    /// counts, recycle list) are synchronised (`--sync`).
    pub sync: SyncMode,
    /// The most threads started beyond the workers to take over the worker of a
    /// thread blocked inside a C call (`--max-blocking-threads`,
    /// `LUTRA_MAX_BLOCKING_THREADS`; 0: a blocked call keeps its worker). Threads are
    /// started only when a call blocks.
    pub max_blocking_threads: usize,
    /// Every process's `package.path` and `package.cpath` (default: `lua5.4`'s in
    /// this environment, see [`PackagePaths`](crate::PackagePaths)).
    pub package_paths: crate::PackagePaths,
    /// Count the messages sent and received, for
    /// [`LuaRuntime::stats`](crate::LuaRuntime::stats) (`lutra --stats`). Off (the
    /// default), a message pays nothing for the count, and both counts stay 0.
    pub count_messages: bool,
}

/// The most worker threads a runtime starts. Each worker is an OS thread with its
/// own stacks; far beyond the cores they only cost memory, and at some thousands the
/// OS refuses to create more (`lutra -w 65535` ended in SIGABRT). 1024 leaves room for
/// oversubscription experiments on any machine Lutra targets.
pub const MAX_WORKERS: usize = 1024;

/// `-w` / `LUTRA_WORKERS`: a worker count, 1 to [`MAX_WORKERS`].
pub fn parse_workers(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_WORKERS).contains(&n) => Ok(n),
        Ok(0) => Err("a worker count must be at least 1".into()),
        Ok(_) => Err(format!(
            "'{}' workers is more than Lutra starts (at most {MAX_WORKERS})",
            text.trim()
        )),
        Err(_) => Err(format!(
            "'{text}' is not a worker count (a whole number from 1 to {MAX_WORKERS})"
        )),
    }
}

/// `--memory-limit` / `LUTRA_MEMORY_LIMIT`: bytes, or with a K, M or G suffix (powers
/// of 1024): `1048576`, `512K`, `64M`, `1G`; more than 0.
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let (digits, scale) = match text.char_indices().last() {
        Some((i, 'k' | 'K')) => (&text[..i], 1usize << 10),
        Some((i, 'm' | 'M')) => (&text[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&text[..i], 1 << 30),
        _ => (text, 1),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("'{text}' is not a size in bytes (e.g. 1048576, 512K, 64M)"))
}

/// `--mailbox-cap` / `LUTRA_MAILBOX_CAP`: a message count, 0 or more.
pub fn parse_mailbox_capacity(text: &str) -> Result<usize, String> {
    text.trim()
        .parse::<usize>()
        .map_err(|_| format!("'{text}' is not a message count (a whole number, 0 or more)"))
}

/// The longest time slice `--preempt` takes, in milliseconds (one minute).
pub const MAX_PREEMPT_MS: u32 = 60_000;

/// `--preempt` / `LUTRA_PREEMPT`: the time slice in milliseconds, 0 for never.
///
/// # Errors
/// A message naming the value when it is not a whole number from 0 to
/// [`MAX_PREEMPT_MS`].
pub fn parse_preempt(text: &str) -> Result<u32, String> {
    text.trim()
        .parse::<u32>()
        .ok()
        .filter(|ms| *ms <= MAX_PREEMPT_MS)
        .ok_or_else(|| {
            format!("'{text}' is not a time slice (whole milliseconds from 0 to {MAX_PREEMPT_MS})")
        })
}

/// The largest `--max-blocking-threads` / `LUTRA_MAX_BLOCKING_THREADS`.
pub const MAX_BLOCKING_THREADS: usize = 4096;

/// `--max-blocking-threads` / `LUTRA_MAX_BLOCKING_THREADS`: a thread count, 0 to
/// [`MAX_BLOCKING_THREADS`].
///
/// # Errors
/// A message naming the value when it is not a whole number in that range.
pub fn parse_max_blocking_threads(text: &str) -> Result<usize, String> {
    text.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| *n <= MAX_BLOCKING_THREADS)
        .ok_or_else(|| {
            format!(
                "'{text}' is not a thread count (a whole number from 0 to {MAX_BLOCKING_THREADS})"
            )
        })
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
            preempt_slice_ms: 5,
            sync: SyncMode::Locks,
            max_blocking_threads: lutra_sched::DEFAULT_MAX_BLOCKING_THREADS,
            package_paths: crate::PackagePaths::default(),
            count_messages: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_suffixes() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("512K"), Ok(512 << 10));
        assert_eq!(parse_bytes("64m"), Ok(64 << 20));
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("99999999999999999999G").is_err());
    }

    #[test]
    fn worker_counts_are_bounded() {
        assert_eq!(parse_workers("1"), Ok(1));
        assert_eq!(parse_workers(" 1024 "), Ok(MAX_WORKERS));
        for bad in ["0", "-3", "abc", "", "1025", "65535", "1.5"] {
            assert!(parse_workers(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn counts_refuse_garbage() {
        assert_eq!(parse_mailbox_capacity("0"), Ok(0));
        assert!(parse_mailbox_capacity("-1").is_err());
        assert!(parse_mailbox_capacity("many").is_err());
        assert_eq!(parse_preempt("0"), Ok(0));
        assert_eq!(parse_preempt(" 20 "), Ok(20));
        assert!(parse_preempt("60001").is_err());
        assert!(parse_preempt("4294967296").is_err());
        assert!(parse_preempt("x").is_err());
        assert_eq!(parse_max_blocking_threads("0"), Ok(0));
        assert_eq!(parse_max_blocking_threads(" 64 "), Ok(64));
        for bad in ["-1", "4097", "many", ""] {
            assert!(parse_max_blocking_threads(bad).is_err(), "{bad} accepted");
        }
    }
}
