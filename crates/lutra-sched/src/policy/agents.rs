//! Who a hook call comes from, and the state policies keep per caller.
//!
//! Hooks run on the transaction's own task (or thread, outside tasks). Policies keep
//! profiles per *agent*: the task (LUTS's execution context, TxLinux's thread) or,
//! outside tasks, the OS thread; and per-attempt marks per descriptor *slot* (one slot
//! runs one transaction at a time, from its start hook to its end).
//!
//! # Invariants
//! - Task agents are task ids (below 2^63); thread agents have bit 63 set, so the two
//!   never collide. (Tasks of two runtimes sharing one policy may share an id, and
//!   then a profile: an imprecision of the heuristic, never an error.)
//! - A shard of an [`AgentMap`] holds at most `SHARD_CAPACITY` agents: when a new
//!   agent would exceed that, the agents not used in the shard's last
//!   `SHARD_CAPACITY / 2` uses are forgotten (finished tasks, mostly); an agent that
//!   comes back starts from a fresh profile.
//! - [`SlotMarks`] index slots modulo their length: with more live descriptors than
//!   marks, two slots may share one, which can cost one switch too many or too few.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

const SHARDS: usize = 16;
const SHARD_CAPACITY: usize = 1024;
/// Per-slot marks kept (the engine's default `max_descriptors`).
const SLOT_MARKS: usize = 4096;
const THREAD_AGENT: u64 = 1 << 63;

/// The agent calling a hook: the current task's id, or the current thread's agent id.
pub(crate) fn current_agent() -> u64 {
    match crate::current_task() {
        Some(task) => task.id(),
        None => thread_agent(),
    }
}

#[inline(never)]
fn thread_agent() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    thread_local! {
        static AGENT: u64 = THREAD_AGENT | NEXT.fetch_add(1, Ordering::Relaxed);
    }
    AGENT.with(|agent| *agent)
}

struct Entry<S> {
    state: S,
    used: u64,
}

struct Shard<S> {
    entries: HashMap<u64, Entry<S>>,
    uses: u64,
}

/// State of type `S` per agent, created with `S::default()` at the agent's first use.
pub(crate) struct AgentMap<S> {
    shards: Box<[Mutex<Shard<S>>]>,
}

impl<S: Default> AgentMap<S> {
    pub(crate) fn new() -> Self {
        let shards = (0..SHARDS)
            .map(|_| {
                Mutex::new(Shard {
                    entries: HashMap::new(),
                    uses: 0,
                })
            })
            .collect();
        Self { shards }
    }

    /// Runs `f` on `agent`'s state (creating it). `f` must not park: the shard is
    /// locked while it runs.
    pub(crate) fn with<R>(&self, agent: u64, f: impl FnOnce(&mut S) -> R) -> R {
        let mut shard = self.shards[agent as usize % SHARDS]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        shard.uses += 1;
        let now = shard.uses;
        if shard.entries.len() >= SHARD_CAPACITY && !shard.entries.contains_key(&agent) {
            let horizon = (SHARD_CAPACITY / 2) as u64;
            shard.entries.retain(|_, entry| now - entry.used <= horizon);
        }
        let entry = shard.entries.entry(agent).or_insert_with(|| Entry {
            state: S::default(),
            used: now,
        });
        entry.used = now;
        f(&mut entry.state)
    }

    /// How many agents are remembered (for tests of the bound).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.lock().unwrap().entries.len())
            .sum()
    }
}

/// One flag per descriptor slot: "this attempt's start already switched away once".
pub(crate) struct SlotMarks {
    marks: Box<[AtomicBool]>,
}

impl SlotMarks {
    pub(crate) fn new() -> Self {
        Self {
            marks: (0..SLOT_MARKS).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// Sets the mark of `slot`.
    pub(crate) fn set(&self, slot: usize) {
        // ORDERING: relaxed: a slot is used by one task at a time, and a task that
        // moves to another worker crosses the run queue's lock.
        self.marks[slot % SLOT_MARKS].store(true, Ordering::Relaxed);
    }

    /// Clears the mark of `slot`, returning whether it was set.
    pub(crate) fn take(&self, slot: usize) -> bool {
        self.marks[slot % SLOT_MARKS].swap(false, Ordering::Relaxed)
    }
}

/// One word per descriptor slot (CTLUTS: the worker an attempt registered on, plus 1;
/// 0 for none).
pub(crate) struct SlotWords {
    words: Box<[AtomicUsize]>,
}

impl SlotWords {
    pub(crate) fn new() -> Self {
        Self {
            words: (0..SLOT_MARKS).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    pub(crate) fn store(&self, slot: usize, word: usize) {
        self.words[slot % SLOT_MARKS].store(word, Ordering::Relaxed);
    }

    pub(crate) fn take(&self, slot: usize) -> usize {
        self.words[slot % SLOT_MARKS].swap(0, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_forgets_its_least_recently_used_agents() {
        let map: AgentMap<u32> = AgentMap::new();
        for agent in 0..(SHARDS * SHARD_CAPACITY * 3) as u64 {
            map.with(agent, |state| *state += 1);
        }
        assert!(map.len() <= SHARDS * SHARD_CAPACITY, "{}", map.len());
        let recent = (SHARDS * SHARD_CAPACITY * 3 - 1) as u64;
        assert_eq!(map.with(recent, |state| *state), 1);
    }

    #[test]
    fn threads_and_tasks_are_different_agents() {
        let here = current_agent();
        assert!(here & THREAD_AGENT != 0);
        assert_eq!(here, current_agent());
        let there = std::thread::spawn(current_agent).join().unwrap();
        assert_ne!(here, there);
    }

    #[test]
    fn slot_marks_are_taken_once() {
        let marks = SlotMarks::new();
        marks.set(7);
        assert!(marks.take(7));
        assert!(!marks.take(7));
    }
}
