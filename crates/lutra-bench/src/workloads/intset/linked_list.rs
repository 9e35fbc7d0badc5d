//! Sorted singly linked list with a head sentinel (the classic `intset` list).
//!
//! # Invariants
//! - Keys strictly increase along `next` from the head; the last node's `next` is
//!   [`NIL`].
//! - The head sentinel holds no key.
//!
//! Every operation walks from the head, so each reads about half the list: update
//! transactions conflict with anything that writes a link they passed, which is what
//! makes the list the high-contention structure of the benchmark.

use super::IntSet;
use super::arena::{Arena, NIL, NodePool};
use super::memory::{Access, Word};

/// A list node: its key and the link to the next node.
#[derive(Debug, Default)]
struct Node<W> {
    key: W,
    next: W,
}

/// A sorted linked list of `u64` keys over words `W`.
#[derive(Debug)]
pub struct LinkedList<W> {
    nodes: Arena<Node<W>>,
    head: Node<W>,
}

/// Where a key is, or would be: the link that leads to the first node with a key
/// greater than or equal to it.
struct Position<'l, W> {
    link: &'l W,
    node: u64,
    node_key: u64,
}

impl<W: Word> LinkedList<W> {
    /// Walks to the position of `key`.
    fn find<A: Access<Word = W>>(&self, a: &mut A, key: u64) -> Result<Position<'_, W>, A::Error> {
        let mut link = &self.head.next;
        loop {
            let node = a.load(link)?;
            if node == NIL {
                return Ok(Position {
                    link,
                    node,
                    node_key: u64::MAX,
                });
            }
            let current = self.nodes.get(node);
            let node_key = a.load(&current.key)?;
            if node_key >= key {
                return Ok(Position {
                    link,
                    node,
                    node_key,
                });
            }
            link = &current.next;
        }
    }
}

impl<W: Word> IntSet for LinkedList<W> {
    type Word = W;
    const NAME: &'static str = "list";

    fn with_capacity(_expected: usize) -> Self {
        Self {
            nodes: Arena::new(),
            head: Node::default(),
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
        let at = self.find(a, key)?;
        if at.node != NIL && at.node_key == key {
            return Ok(false);
        }
        let fresh = self.nodes.take(pool);
        let node = self.nodes.get(fresh);
        a.store(&node.key, key)?;
        a.store(&node.next, at.node)?;
        a.store(at.link, fresh)?;
        Ok(true)
    }

    fn remove<A: Access<Word = W>>(
        &self,
        a: &mut A,
        pool: &mut NodePool,
        key: u64,
    ) -> Result<bool, A::Error> {
        let at = self.find(a, key)?;
        if at.node == NIL || at.node_key != key {
            return Ok(false);
        }
        let next = a.load(&self.nodes.get(at.node).next)?;
        a.store(at.link, next)?;
        self.nodes.retire(pool, at.node);
        Ok(true)
    }

    fn contains<A: Access<Word = W>>(&self, a: &mut A, key: u64) -> Result<bool, A::Error> {
        let at = self.find(a, key)?;
        Ok(at.node != NIL && at.node_key == key)
    }

    fn elements<A: Access<Word = W>>(&self, a: &mut A) -> Result<Vec<u64>, A::Error> {
        let mut keys = Vec::new();
        let mut node = a.load(&self.head.next)?;
        while node != NIL {
            let current = self.nodes.get(node);
            keys.push(a.load(&current.key)?);
            node = a.load(&current.next)?;
        }
        Ok(keys)
    }
}
