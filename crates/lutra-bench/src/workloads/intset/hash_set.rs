//! Hash set: a fixed array of buckets, each an unsorted chain of nodes (no resizing,
//! as in synchrobench's transactional hash set).
//!
//! # Invariants
//! - A key is in the chain of bucket `hash(key)` and appears at most once there.
//! - The bucket count is a power of two, at least the expected size (load factor ≤ 1
//!   while the set stays near its expected size).
//!
//! Operations touch one bucket: conflicts happen only between operations on keys that
//! share a bucket (or an ownership record).

use super::IntSet;
use super::arena::{Arena, NIL, NodePool};
use super::memory::{Access, Word};

/// A chain node: its key and the link to the next node of the bucket.
#[derive(Debug, Default)]
struct Node<W> {
    key: W,
    next: W,
}

/// A hash set of `u64` keys over words `W`.
#[derive(Debug)]
pub struct HashSet<W> {
    nodes: Arena<Node<W>>,
    buckets: Box<[W]>,
    /// `64 - log2(bucket count)`: Fibonacci hashing keeps the top bits.
    shift: u32,
}

/// Where a key is in its chain, if anywhere.
struct Position<'s, W> {
    /// The link that points to `node` (a bucket head or a node's `next`).
    link: &'s W,
    /// The node holding the key, or [`NIL`].
    node: u64,
}

impl<W: Word> HashSet<W> {
    fn bucket(&self, key: u64) -> &W {
        let hash = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift;
        &self.buckets[hash as usize]
    }

    fn find<A: Access<Word = W>>(&self, a: &mut A, key: u64) -> Result<Position<'_, W>, A::Error> {
        let mut link = self.bucket(key);
        loop {
            let node = a.load(link)?;
            if node == NIL {
                return Ok(Position { link, node });
            }
            let current = self.nodes.get(node);
            if a.load(&current.key)? == key {
                return Ok(Position { link, node });
            }
            link = &current.next;
        }
    }
}

impl<W: Word> IntSet for HashSet<W> {
    type Word = W;
    const NAME: &'static str = "hash";

    fn with_capacity(expected: usize) -> Self {
        let count = expected.max(2).next_power_of_two();
        Self {
            nodes: Arena::new(),
            buckets: (0..count).map(|_| W::new(NIL)).collect(),
            shift: 64 - count.trailing_zeros(),
        }
    }

    fn pool(&self) -> NodePool {
        self.nodes.pool()
    }

    fn insert<A: Access<Word = W>>(
        &self,
        a: &mut A,
        pool: &mut NodePool,
        key: u64,
    ) -> Result<bool, A::Error> {
        if self.find(a, key)?.node != NIL {
            return Ok(false);
        }
        let bucket = self.bucket(key);
        let first = a.load(bucket)?;
        let fresh = self.nodes.take(pool);
        let node = self.nodes.get(fresh);
        a.store(&node.key, key)?;
        a.store(&node.next, first)?;
        a.store(bucket, fresh)?;
        Ok(true)
    }

    fn remove<A: Access<Word = W>>(
        &self,
        a: &mut A,
        pool: &mut NodePool,
        key: u64,
    ) -> Result<bool, A::Error> {
        let at = self.find(a, key)?;
        if at.node == NIL {
            return Ok(false);
        }
        let next = a.load(&self.nodes.get(at.node).next)?;
        a.store(at.link, next)?;
        self.nodes.retire(pool, at.node);
        Ok(true)
    }

    fn contains<A: Access<Word = W>>(&self, a: &mut A, key: u64) -> Result<bool, A::Error> {
        Ok(self.find(a, key)?.node != NIL)
    }

    fn elements<A: Access<Word = W>>(&self, a: &mut A) -> Result<Vec<u64>, A::Error> {
        let mut keys = Vec::new();
        for bucket in &self.buckets {
            let mut node = a.load(bucket)?;
            while node != NIL {
                let current = self.nodes.get(node);
                keys.push(a.load(&current.key)?);
                node = a.load(&current.next)?;
            }
        }
        keys.sort_unstable();
        Ok(keys)
    }
}
