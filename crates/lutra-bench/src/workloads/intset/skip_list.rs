//! Skip list (Pugh), with geometric node levels (p = 1/2) and a head sentinel that
//! has every level.
//!
//! # Invariants
//! - At every level `l`, keys strictly increase along `next[l]` from the head; a node
//!   of level `h` is linked at levels `0..h` and nowhere else.
//! - Level 0 holds every key; the list's height is fixed at construction from the
//!   expected size (`⌈log2(2 · expected)⌉`, at most [`MAX_LEVELS`]).
//!
//! Searches descend from the top level, so an operation reads O(log n) words and
//! updates write only the links next to their key: far fewer conflicts than the list.

use super::IntSet;
use super::arena::{Arena, NIL, NodePool};
use super::memory::{Access, Word};

/// The most levels a skip list can have.
pub const MAX_LEVELS: usize = 24;

/// A skip list node: its key, its level (height) and its links.
#[derive(Debug, Default)]
struct Node<W> {
    key: W,
    level: W,
    next: [W; MAX_LEVELS],
}

/// A skip list of `u64` keys over words `W`.
#[derive(Debug)]
pub struct SkipList<W> {
    nodes: Arena<Node<W>>,
    head: Node<W>,
    levels: usize,
}

impl<W: Word> SkipList<W> {
    /// The node at `index`, or the head for [`NIL`].
    fn node(&self, index: u64) -> &Node<W> {
        if index == NIL {
            &self.head
        } else {
            self.nodes.get(index)
        }
    }

    /// Fills `preds[l]` with the last node (or [`NIL`] for the head) whose key is below
    /// `key` at each level `l`, and returns the level-0 successor of `preds[0]` and its
    /// key (`u64::MAX` for none).
    fn find<A: Access<Word = W>>(
        &self,
        a: &mut A,
        key: u64,
        preds: &mut [u64; MAX_LEVELS],
    ) -> Result<(u64, u64), A::Error> {
        let mut pred = NIL;
        let mut found = (NIL, u64::MAX);
        for level in (0..self.levels).rev() {
            found = self.advance(a, &mut pred, level, key)?;
            preds[level] = pred;
        }
        Ok(found)
    }

    /// Moves `pred` right along `level` while the next key is below `key`; returns the
    /// next node and its key (`u64::MAX` for none).
    fn advance<A: Access<Word = W>>(
        &self,
        a: &mut A,
        pred: &mut u64,
        level: usize,
        key: u64,
    ) -> Result<(u64, u64), A::Error> {
        loop {
            let next = a.load(&self.node(*pred).next[level])?;
            if next == NIL {
                return Ok((NIL, u64::MAX));
            }
            let next_key = a.load(&self.nodes.get(next).key)?;
            if next_key >= key {
                return Ok((next, next_key));
            }
            *pred = next;
        }
    }

    /// A random level in `1..=self.levels`, geometric with p = 1/2.
    fn random_level(&self) -> usize {
        (1 + fastrand::u64(..).trailing_ones() as usize).min(self.levels)
    }
}

impl<W: Word> IntSet for SkipList<W> {
    type Word = W;
    const NAME: &'static str = "skip";

    fn with_capacity(expected: usize) -> Self {
        let levels = (2 * expected.max(2)).next_power_of_two().trailing_zeros() as usize;
        Self {
            nodes: Arena::new(),
            head: Node::default(),
            levels: levels.clamp(2, MAX_LEVELS),
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
        let mut preds = [NIL; MAX_LEVELS];
        let (found, found_key) = self.find(a, key, &mut preds)?;
        if found != NIL && found_key == key {
            return Ok(false);
        }
        let fresh = self.nodes.take(pool);
        let node = self.nodes.get(fresh);
        let height = self.random_level();
        a.store(&node.key, key)?;
        a.store(&node.level, height as u64)?;
        for (level, &pred) in preds.iter().enumerate().take(height) {
            let link = &self.node(pred).next[level];
            let next = a.load(link)?;
            a.store(&node.next[level], next)?;
            a.store(link, fresh)?;
        }
        Ok(true)
    }

    fn remove<A: Access<Word = W>>(
        &self,
        a: &mut A,
        pool: &mut NodePool,
        key: u64,
    ) -> Result<bool, A::Error> {
        let mut preds = [NIL; MAX_LEVELS];
        let (found, found_key) = self.find(a, key, &mut preds)?;
        if found == NIL || found_key != key {
            return Ok(false);
        }
        let node = self.nodes.get(found);
        let height = a.load(&node.level)? as usize;
        for (level, &pred) in preds.iter().enumerate().take(height) {
            let next = a.load(&node.next[level])?;
            a.store(&self.node(pred).next[level], next)?;
        }
        self.nodes.retire(pool, found);
        Ok(true)
    }

    fn contains<A: Access<Word = W>>(&self, a: &mut A, key: u64) -> Result<bool, A::Error> {
        let mut pred = NIL;
        for level in (0..self.levels).rev() {
            let (next, next_key) = self.advance(a, &mut pred, level, key)?;
            if next != NIL && next_key == key {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn elements<A: Access<Word = W>>(&self, a: &mut A) -> Result<Vec<u64>, A::Error> {
        let mut keys = Vec::new();
        let mut node = a.load(&self.head.next[0])?;
        while node != NIL {
            let current = self.nodes.get(node);
            keys.push(a.load(&current.key)?);
            node = a.load(&current.next[0])?;
        }
        Ok(keys)
    }
}
