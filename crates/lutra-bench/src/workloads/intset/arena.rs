//! Type-stable node storage: nodes are named by index, never freed while their set
//! lives, and recycled through per-thread pools.
//!
//! Avoiding `Arc` (and any reference count) on the hot path keeps read-mostly
//! workloads scalable: following a link is reading an index word, nothing is written.
//!
//! # Invariants
//! - Index 0 is [`NIL`]: never handed out; chunk memory stays allocated until the arena
//!   is dropped (type-stable memory), so an index read in any snapshot always names a
//!   valid node.
//! - A node is in exactly one of: linked in the set, in some pool (`free` or `taken`),
//!   in the shared free list, or unused beyond the bump index.
//!
//! # Protocol (one operation of a thread, transactional or not)
//! 1. [`NodePool::begin_attempt`] at the start of every attempt: forgets the nodes the
//!    previous (aborted) attempt retired, and rewinds the nodes it took.
//! 2. [`Arena::take`] for each node the attempt links in (a re-run gets the same
//!    nodes back); the attempt initializes every field of the node with its own
//!    (transactional) writes.
//! 3. [`Arena::retire`] for each node the attempt unlinks.
//! 4. [`NodePool::commit`] once the operation has committed: retired nodes and taken
//!    but unused ones become free for this thread's next operations.
//!
//! Reuse right after unlinking is safe only because every access to the nodes is
//! transactional and validated: a transaction still holding the old index reads fields
//! whose versions changed, and aborts (the engine is opaque, so it never acts on the
//! mix). Under [`Direct`](super::Direct) access, updates are exclusive, so no one
//! holds a stale index.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The null node index.
pub const NIL: u64 = 0;

/// Nodes per chunk, as a power of two.
const CHUNK_BITS: u32 = 10;
/// Most chunks per arena (4 Mi nodes).
const MAX_CHUNKS: usize = 1 << 12;
/// Nodes moved at once between a pool and the shared list (or the bump index).
const BATCH: usize = 32;
/// A pool holding more free nodes than this gives a batch back.
const SPILL_ABOVE: usize = 4 * BATCH;

/// What the pools of one arena share.
#[derive(Debug)]
struct Shared {
    /// Nodes given back by pools.
    free: Mutex<Vec<u64>>,
    /// First index never handed out.
    bump: AtomicU64,
}

impl Shared {
    fn refill(&self, into: &mut Vec<u64>) {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        let from = free.len().saturating_sub(BATCH);
        into.extend(free.drain(from..));
        drop(free);
        if into.is_empty() {
            let start = self.bump.fetch_add(BATCH as u64, Ordering::Relaxed);
            let end = start + BATCH as u64;
            assert!(
                end <= (MAX_CHUNKS as u64) << CHUNK_BITS,
                "node arena full ({} nodes)",
                MAX_CHUNKS << CHUNK_BITS
            );
            into.extend((start..end).rev());
        }
    }

    fn give_back(&self, nodes: impl IntoIterator<Item = u64>) {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        free.extend(nodes);
    }
}

/// A thread's cache of free nodes of one arena (see the module protocol). Dropping
/// it gives its nodes back to the arena.
#[derive(Debug)]
pub struct NodePool {
    shared: Arc<Shared>,
    free: Vec<u64>,
    /// Nodes taken by the running operation, in the order its attempts take them.
    taken: Vec<u64>,
    /// How many of `taken` the current attempt has used.
    used: usize,
    /// Nodes unlinked by the current attempt.
    retiring: Vec<u64>,
}

impl NodePool {
    /// Step 1: call at the start of every attempt of an operation.
    pub fn begin_attempt(&mut self) {
        self.used = 0;
        self.retiring.clear();
    }

    /// Step 4: call once the operation has committed (or, for direct access, has
    /// completed).
    pub fn commit(&mut self) {
        let used = std::mem::replace(&mut self.used, 0);
        self.free.extend(self.taken.drain(used..));
        self.taken.clear();
        self.free.append(&mut self.retiring);
        if self.free.len() > SPILL_ABOVE {
            self.shared.give_back(self.free.drain(2 * BATCH..));
        }
    }
}

impl Drop for NodePool {
    fn drop(&mut self) {
        // Not committed: whatever was taken is not linked.
        let nodes = self.free.drain(..).chain(self.taken.drain(..));
        self.shared.give_back(nodes);
    }
}

/// Type-stable storage for nodes of type `N`, addressed by index.
#[derive(Debug)]
pub struct Arena<N> {
    chunks: Box<[OnceLock<Box<[N]>>]>,
    shared: Arc<Shared>,
}

impl<N: Default> Default for Arena<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<N: Default> Arena<N> {
    /// An empty arena (chunks are allocated on first use).
    pub fn new() -> Self {
        Self {
            chunks: (0..MAX_CHUNKS).map(|_| OnceLock::new()).collect(),
            shared: Arc::new(Shared {
                free: Mutex::new(Vec::new()),
                bump: AtomicU64::new(NIL + 1),
            }),
        }
    }

    /// The node at `index`.
    ///
    /// # Panics
    /// If `index` is [`NIL`] or beyond the arena's capacity.
    #[inline]
    pub fn get(&self, index: u64) -> &N {
        debug_assert_ne!(index, NIL, "dereferenced NIL");
        let chunk = &self.chunks[(index >> CHUNK_BITS) as usize];
        let nodes = chunk.get_or_init(|| (0..1usize << CHUNK_BITS).map(|_| N::default()).collect());
        &nodes[(index & ((1 << CHUNK_BITS) - 1)) as usize]
    }

    /// A new pool for one thread.
    pub fn pool(&self) -> NodePool {
        NodePool {
            shared: self.shared.clone(),
            free: Vec::new(),
            taken: Vec::new(),
            used: 0,
            retiring: Vec::new(),
        }
    }

    /// Step 2 of the protocol: a node for the current attempt to link in.
    ///
    /// # Panics
    /// If `pool` belongs to another arena, or the arena is full.
    pub fn take(&self, pool: &mut NodePool) -> u64 {
        debug_assert!(Arc::ptr_eq(&pool.shared, &self.shared), "foreign pool");
        if pool.used == pool.taken.len() {
            if pool.free.is_empty() {
                self.shared.refill(&mut pool.free);
            }
            let node = pool.free.pop().expect("refill yields nodes");
            pool.taken.push(node);
        }
        pool.used += 1;
        pool.taken[pool.used - 1]
    }

    /// Step 3 of the protocol: `node` has been unlinked by the current attempt.
    pub fn retire(&self, pool: &mut NodePool, node: u64) {
        debug_assert!(Arc::ptr_eq(&pool.shared, &self.shared), "foreign pool");
        debug_assert_ne!(node, NIL);
        pool.retiring.push(node);
    }

    /// Nodes ever handed out (a bound on the arena's footprint).
    pub fn high_water(&self) -> u64 {
        self.shared.bump.load(Ordering::Relaxed) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reruns_get_the_same_nodes_and_unused_ones_come_back() {
        let arena: Arena<u64> = Arena::new();
        let mut pool = arena.pool();
        pool.begin_attempt();
        let first = arena.take(&mut pool);
        pool.begin_attempt();
        assert_eq!(arena.take(&mut pool), first);
        let second = arena.take(&mut pool);
        pool.begin_attempt();
        assert_eq!(arena.take(&mut pool), first);
        pool.commit();
        pool.begin_attempt();
        assert_eq!(
            arena.take(&mut pool),
            second,
            "the unused node is reused first"
        );
        arena.retire(&mut pool, first);
        pool.begin_attempt();
        pool.commit();
        pool.begin_attempt();
        let third = arena.take(&mut pool);
        assert_ne!(third, first, "a retire of an aborted attempt is forgotten");
    }

    #[test]
    fn pools_spill_and_refill_through_the_shared_list() {
        let arena: Arena<u64> = Arena::new();
        let mut pool = arena.pool();
        let nodes: Vec<u64> = (0..10 * BATCH)
            .map(|_| {
                let node = arena.take(&mut pool);
                pool.commit();
                node
            })
            .collect();
        for node in &nodes {
            arena.retire(&mut pool, *node);
        }
        pool.commit();
        assert!(pool.free.len() <= SPILL_ABOVE);
        drop(pool);
        let before = arena.high_water();
        let mut other = arena.pool();
        for _ in 0..10 * BATCH {
            arena.take(&mut other);
        }
        assert_eq!(
            arena.high_water(),
            before,
            "all nodes came from the free list"
        );
        assert!(*arena.get(nodes[0]) == 0);
    }
}
