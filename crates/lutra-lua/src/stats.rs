//! What the runtime counts for `lutra --stats`: processes spawned, messages sent and
//! received (channels and mailboxes alike), and the engine's per-site transaction
//! statistics when the runtime has an engine for shared tables.
//!
//! # Invariants
//! - Counters only grow; they are read with relaxed loads (a snapshot is approximate
//!   while processes run, exact after [`LuaRuntime::wait`](crate::LuaRuntime::wait)).
//! - Messages are counted only when the runtime was asked to
//!   ([`Options::count_messages`](crate::Options::count_messages), `--stats`): the
//!   choice is made once, when the runtime starts, and a message then costs a load of
//!   that flag and a branch the processor predicts. Otherwise both counts stay 0.
//! - Messages are counted in one of [`SHARDS`] shards, each on its own cache lines,
//!   chosen by the counting process's id: processes on different workers rarely
//!   write the same line once per message. A snapshot sums the shards.

use std::sync::atomic::{AtomicU64, Ordering};

/// Shards of the message counters.
const SHARDS: usize = 16;

/// One shard of the message counters, alone on its cache lines.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard {
    sent: AtomicU64,
    received: AtomicU64,
}

/// The runtime's event counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    spawned: AtomicU64,
    /// Whether messages are counted (fixed when the runtime starts).
    messages: bool,
    shards: [Shard; SHARDS],
}

impl Counters {
    /// Counters at 0, counting messages when `messages` (module invariants).
    pub(crate) fn new(messages: bool) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }

    pub(crate) fn note_spawned(&self) {
        self.spawned.fetch_add(1, Ordering::Relaxed);
    }

    /// Process `by` sent a message (counted only when messages are).
    #[inline(always)]
    pub(crate) fn note_sent(&self, by: u64) {
        if self.messages {
            self.shard(by).sent.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Process `by` received a message (counted only when messages are).
    #[inline(always)]
    pub(crate) fn note_received(&self, by: u64) {
        if self.messages {
            self.shard(by).received.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[inline]
    fn shard(&self, by: u64) -> &Shard {
        &self.shards[(by % SHARDS as u64) as usize]
    }

    pub(crate) fn snapshot(&self) -> RuntimeStats {
        RuntimeStats {
            processes_spawned: self.spawned.load(Ordering::Relaxed),
            messages_sent: self
                .shards
                .iter()
                .map(|s| s.sent.load(Ordering::Relaxed))
                .sum(),
            messages_received: (self.shards.iter())
                .map(|s| s.received.load(Ordering::Relaxed))
                .sum(),
            transactions: None,
            blocking_handoffs: 0,
            blocking_threads: 0,
        }
    }
}

/// A snapshot of a runtime's statistics ([`LuaRuntime::stats`](crate::LuaRuntime::stats)).
#[derive(Debug, Clone, Default)]
pub struct RuntimeStats {
    /// Processes started (the main script included).
    pub processes_spawned: u64,
    /// Messages accepted by `send` (channels, mailboxes, luaproc channels); 0
    /// unless the runtime counts messages (`Options::count_messages`).
    pub messages_sent: u64,
    /// Messages handed to a receiver; 0 unless the runtime counts messages.
    pub messages_received: u64,
    /// Workers taken over from threads blocked in C calls (see docs/lua-api.md,
    /// "Blocking C calls hand their worker over").
    pub blocking_handoffs: u64,
    /// Threads started beyond the workers for those hand-offs.
    pub blocking_threads: u64,
    /// The transaction engine's statistics (per-site commits and aborts), when the
    /// runtime runs one for shared tables.
    pub transactions: Option<lutra_stm::Stats>,
}

impl std::fmt::Display for RuntimeStats {
    /// The `--stats` report: one line per counter, then one per transaction site.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "processes spawned  {}", self.processes_spawned)?;
        writeln!(f, "messages sent      {}", self.messages_sent)?;
        writeln!(f, "messages received  {}", self.messages_received)?;
        writeln!(
            f,
            "blocked calls      {} hand-offs, {} threads started",
            self.blocking_handoffs, self.blocking_threads
        )?;
        let Some(stats) = &self.transactions else {
            return Ok(());
        };
        writeln!(
            f,
            "transactions       {} commits, {} aborts",
            stats.total.commits,
            stats.total.total_aborts()
        )?;
        let mut sites: Vec<_> = stats.by_site.iter().collect();
        sites.sort_by_key(|(site, _)| **site);
        for (site, counters) in sites {
            writeln!(
                f,
                "  site {site:<8} {} commits, {} aborts",
                counters.commits,
                counters.total_aborts()
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Counters;

    /// Counts every message on every shard when messages are counted, none when not
    /// (the spawns either way).
    #[test]
    fn messages_are_counted_only_when_asked() {
        for counted in [false, true] {
            let counters = Counters::new(counted);
            for by in 0..40 {
                counters.note_sent(by);
                counters.note_received(by);
                counters.note_received(by);
            }
            counters.note_spawned();
            let stats = counters.snapshot();
            let expected = if counted { 40 } else { 0 };
            assert_eq!(stats.messages_sent, expected);
            assert_eq!(stats.messages_received, 2 * expected);
            assert_eq!(stats.processes_spawned, 1);
        }
    }
}
