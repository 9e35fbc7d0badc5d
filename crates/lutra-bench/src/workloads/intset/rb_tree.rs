//! Red-black tree with parent links: STAMP's `rbtree.c`, itself a transcription of
//! Java's `TreeMap` (Cormen et al., ch. 13, with null-safe helpers instead of a
//! sentinel node). Full insert and delete with rebalancing.
//!
//! # Invariants
//! 1. Keys are in binary-search-tree order; `parent` links mirror `left` / `right`.
//! 2. The root is black; a red node has no red child.
//! 3. Every path from a node down to a missing child crosses the same number of black
//!    nodes (the black height).
//!
//! [`RbSnapshot::check`] verifies all three on a copy read in one transaction.
//!
//! # Protocol (delete)
//! 1. A node with two children takes its successor's key; the successor (which has at
//!    most one child) is the node physically removed.
//! 2. The removed node's child, if any, takes its place; a black node removed calls
//!    for `fix_after_deletion`, from the child or, without one, from the node itself
//!    as a phantom before it is unlinked.

use super::IntSet;
use super::arena::{Arena, NIL, NodePool};
use super::memory::{Access, Word};
use super::rb_check::{RbSnapshot, SnapshotNode};

const RED: u64 = 0;
const BLACK: u64 = 1;

/// A tree node.
#[derive(Debug, Default)]
struct Node<W> {
    key: W,
    left: W,
    right: W,
    parent: W,
    color: W,
}

/// A red-black tree of `u64` keys over words `W`.
#[derive(Debug)]
pub struct RbTree<W> {
    nodes: Arena<Node<W>>,
    root: W,
}

/// A field of a node.
#[derive(Clone, Copy)]
enum Field {
    Key,
    Left,
    Right,
    Parent,
    Color,
}

/// One operation's view of the tree: the tree and the access, with `TreeMap`'s
/// null-safe helpers (`NIL` is black and has no links).
struct Cursor<'t, 'a, A: Access> {
    tree: &'t RbTree<A::Word>,
    a: &'a mut A,
}

impl<'t, A: Access> Cursor<'t, '_, A> {
    fn word(&self, node: u64, field: Field) -> &'t A::Word {
        let node = self.tree.nodes.get(node);
        match field {
            Field::Key => &node.key,
            Field::Left => &node.left,
            Field::Right => &node.right,
            Field::Parent => &node.parent,
            Field::Color => &node.color,
        }
    }

    /// `field` of `node`; [`NIL`] (or black, for the color) when `node` is `NIL`.
    fn get(&mut self, node: u64, field: Field) -> Result<u64, A::Error> {
        match (node, field) {
            (NIL, Field::Color) => Ok(BLACK),
            (NIL, _) => Ok(NIL),
            _ => {
                let word = self.word(node, field);
                self.a.load(word)
            }
        }
    }

    /// Sets `field` of `node`; does nothing when `node` is `NIL`.
    fn set(&mut self, node: u64, field: Field, value: u64) -> Result<(), A::Error> {
        if node == NIL {
            return Ok(());
        }
        let word = self.word(node, field);
        self.a.store(word, value)
    }

    fn root(&mut self) -> Result<u64, A::Error> {
        self.a.load(&self.tree.root)
    }

    fn set_root(&mut self, node: u64) -> Result<(), A::Error> {
        self.a.store(&self.tree.root, node)
    }

    fn parent(&mut self, node: u64) -> Result<u64, A::Error> {
        self.get(node, Field::Parent)
    }

    fn grandparent(&mut self, node: u64) -> Result<u64, A::Error> {
        let parent = self.parent(node)?;
        self.parent(parent)
    }

    /// The child of `node` on `side` (`Left` or `Right`).
    fn child(&mut self, node: u64, side: Field) -> Result<u64, A::Error> {
        self.get(node, side)
    }

    fn color(&mut self, node: u64) -> Result<u64, A::Error> {
        self.get(node, Field::Color)
    }

    fn paint(&mut self, node: u64, color: u64) -> Result<(), A::Error> {
        self.set(node, Field::Color, color)
    }

    /// The node holding `key`, or [`NIL`].
    fn lookup(&mut self, key: u64) -> Result<u64, A::Error> {
        let mut node = self.root()?;
        while node != NIL {
            let node_key = self.get(node, Field::Key)?;
            node = match key.cmp(&node_key) {
                std::cmp::Ordering::Less => self.get(node, Field::Left)?,
                std::cmp::Ordering::Greater => self.get(node, Field::Right)?,
                std::cmp::Ordering::Equal => return Ok(node),
            };
        }
        Ok(NIL)
    }

    /// Rotates `node` down to the `side` (`Left`: its right child rises).
    fn rotate(&mut self, node: u64, side: Field) -> Result<(), A::Error> {
        if node == NIL {
            return Ok(());
        }
        let other = opposite(side);
        let riser = self.get(node, other)?;
        let inner = self.get(riser, side)?;
        self.set(node, other, inner)?;
        self.set(inner, Field::Parent, node)?;
        let parent = self.parent(node)?;
        self.set(riser, Field::Parent, parent)?;
        if parent == NIL {
            self.set_root(riser)?;
        } else if self.get(parent, Field::Left)? == node {
            self.set(parent, Field::Left, riser)?;
        } else {
            self.set(parent, Field::Right, riser)?;
        }
        self.set(riser, side, node)?;
        self.set(node, Field::Parent, riser)
    }

    /// Restores the invariants after linking the red leaf `node`.
    fn fix_after_insertion(&mut self, mut node: u64) -> Result<(), A::Error> {
        self.paint(node, RED)?;
        while node != NIL && node != self.root()? {
            let parent = self.parent(node)?;
            if self.color(parent)? != RED {
                break;
            }
            let grandparent = self.grandparent(node)?;
            let side = if parent == self.get(grandparent, Field::Left)? {
                Field::Left
            } else {
                Field::Right
            };
            let uncle = self.child(grandparent, opposite(side))?;
            if self.color(uncle)? == RED {
                self.paint(parent, BLACK)?;
                self.paint(uncle, BLACK)?;
                self.paint(grandparent, RED)?;
                node = grandparent;
                continue;
            }
            if node == self.child(parent, opposite(side))? {
                node = parent;
                self.rotate(node, side)?;
            }
            let parent = self.parent(node)?;
            let grandparent = self.grandparent(node)?;
            self.paint(parent, BLACK)?;
            self.paint(grandparent, RED)?;
            self.rotate(grandparent, opposite(side))?;
        }
        let root = self.root()?;
        self.paint(root, BLACK)
    }

    /// Restores the invariants after removing a black node; `node` carries the
    /// missing black.
    fn fix_after_deletion(&mut self, mut node: u64) -> Result<(), A::Error> {
        while node != self.root()? && self.color(node)? == BLACK {
            let parent = self.parent(node)?;
            let side = if node == self.get(parent, Field::Left)? {
                Field::Left
            } else {
                Field::Right
            };
            let far = opposite(side);
            let mut sibling = self.child(parent, far)?;
            if self.color(sibling)? == RED {
                self.paint(sibling, BLACK)?;
                self.paint(parent, RED)?;
                self.rotate(parent, side)?;
                let parent = self.parent(node)?;
                sibling = self.child(parent, far)?;
            }
            let near_nephew = self.child(sibling, side)?;
            let far_nephew = self.child(sibling, far)?;
            if self.color(near_nephew)? == BLACK && self.color(far_nephew)? == BLACK {
                self.paint(sibling, RED)?;
                node = self.parent(node)?;
                continue;
            }
            if self.color(far_nephew)? == BLACK {
                self.paint(near_nephew, BLACK)?;
                self.paint(sibling, RED)?;
                self.rotate(sibling, far)?;
                let parent = self.parent(node)?;
                sibling = self.child(parent, far)?;
            }
            let parent = self.parent(node)?;
            let parent_color = self.color(parent)?;
            self.paint(sibling, parent_color)?;
            self.paint(parent, BLACK)?;
            let far_nephew = self.child(sibling, far)?;
            self.paint(far_nephew, BLACK)?;
            self.rotate(parent, side)?;
            node = self.root()?;
        }
        self.paint(node, BLACK)
    }

    /// Adds `key` as a new leaf taken from `fresh` (called only if `key` is absent)
    /// and rebalances; `false` if `key` was present.
    fn insert(&mut self, key: u64, fresh: impl FnOnce() -> u64) -> Result<bool, A::Error> {
        let mut parent = NIL;
        let mut side = Field::Left;
        let mut node = self.root()?;
        while node != NIL {
            side = match key.cmp(&self.get(node, Field::Key)?) {
                std::cmp::Ordering::Less => Field::Left,
                std::cmp::Ordering::Greater => Field::Right,
                std::cmp::Ordering::Equal => return Ok(false),
            };
            parent = node;
            node = self.get(node, side)?;
        }
        let fresh = fresh();
        self.set(fresh, Field::Key, key)?;
        self.set(fresh, Field::Left, NIL)?;
        self.set(fresh, Field::Right, NIL)?;
        self.set(fresh, Field::Parent, parent)?;
        if parent == NIL {
            self.set_root(fresh)?;
            self.paint(fresh, BLACK)?;
        } else {
            self.set(parent, side, fresh)?;
            self.fix_after_insertion(fresh)?;
        }
        Ok(true)
    }

    /// Removes `node` from the tree; returns the node physically unlinked (see the
    /// delete protocol).
    fn delete(&mut self, mut node: u64) -> Result<u64, A::Error> {
        if self.get(node, Field::Left)? != NIL && self.get(node, Field::Right)? != NIL {
            let mut successor = self.get(node, Field::Right)?;
            loop {
                let left = self.get(successor, Field::Left)?;
                if left == NIL {
                    break;
                }
                successor = left;
            }
            let key = self.get(successor, Field::Key)?;
            self.set(node, Field::Key, key)?;
            node = successor;
        }
        let left = self.get(node, Field::Left)?;
        let replacement = if left != NIL {
            left
        } else {
            self.get(node, Field::Right)?
        };
        let parent = self.parent(node)?;
        if replacement != NIL {
            self.set(replacement, Field::Parent, parent)?;
            self.replace_child(parent, node, replacement)?;
            self.set(node, Field::Left, NIL)?;
            self.set(node, Field::Right, NIL)?;
            self.set(node, Field::Parent, NIL)?;
            if self.color(node)? == BLACK {
                self.fix_after_deletion(replacement)?;
            }
        } else if parent == NIL {
            self.set_root(NIL)?;
        } else {
            if self.color(node)? == BLACK {
                self.fix_after_deletion(node)?;
            }
            let parent = self.parent(node)?;
            if parent != NIL {
                self.replace_child(parent, node, NIL)?;
                self.set(node, Field::Parent, NIL)?;
            }
        }
        Ok(node)
    }

    /// Makes `parent` (or the root, for `NIL`) point to `new` where it pointed to `old`.
    fn replace_child(&mut self, parent: u64, old: u64, new: u64) -> Result<(), A::Error> {
        if parent == NIL {
            self.set_root(new)
        } else if self.get(parent, Field::Left)? == old {
            self.set(parent, Field::Left, new)
        } else {
            self.set(parent, Field::Right, new)
        }
    }

    /// Copies the subtree of `node` into `snapshot`; returns its index there.
    fn copy(
        &mut self,
        node: u64,
        parent: u64,
        snapshot: &mut RbSnapshot,
    ) -> Result<Option<usize>, A::Error> {
        if node == NIL {
            return Ok(None);
        }
        if snapshot.nodes.len() as u64 > self.tree.nodes.high_water() {
            snapshot.cyclic = true;
            return Ok(None);
        }
        let copied = SnapshotNode {
            key: self.get(node, Field::Key)?,
            red: self.color(node)? == RED,
            parent_ok: self.parent(node)? == parent,
            left: None,
            right: None,
        };
        let index = snapshot.nodes.len();
        snapshot.nodes.push(copied);
        let left = self.get(node, Field::Left)?;
        snapshot.nodes[index].left = self.copy(left, node, snapshot)?;
        let right = self.get(node, Field::Right)?;
        snapshot.nodes[index].right = self.copy(right, node, snapshot)?;
        Ok(Some(index))
    }
}

fn opposite(side: Field) -> Field {
    match side {
        Field::Left => Field::Right,
        _ => Field::Left,
    }
}

impl<W: Word> RbTree<W> {
    fn cursor<'t, 'a, A: Access<Word = W>>(&'t self, a: &'a mut A) -> Cursor<'t, 'a, A> {
        Cursor { tree: self, a }
    }

    /// A plain copy of the whole tree, read through `a` (one consistent snapshot when
    /// `a` is a transaction). Check it with [`RbSnapshot::check`].
    ///
    /// # Errors
    /// As [`IntSet::insert`].
    pub fn snapshot<A: Access<Word = W>>(&self, a: &mut A) -> Result<RbSnapshot, A::Error> {
        let mut snapshot = RbSnapshot {
            nodes: Vec::new(),
            root: None,
            cyclic: false,
        };
        let mut cursor = self.cursor(a);
        let root = cursor.root()?;
        snapshot.root = cursor.copy(root, NIL, &mut snapshot)?;
        Ok(snapshot)
    }
}

impl<W: Word> IntSet for RbTree<W> {
    type Word = W;
    const NAME: &'static str = "rbtree";

    fn with_capacity(_expected: usize) -> Self {
        Self {
            nodes: Arena::new(),
            root: W::new(NIL),
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
        self.cursor(a).insert(key, || self.nodes.take(pool))
    }

    fn remove<A: Access<Word = W>>(
        &self,
        a: &mut A,
        pool: &mut NodePool,
        key: u64,
    ) -> Result<bool, A::Error> {
        let mut cursor = self.cursor(a);
        let node = cursor.lookup(key)?;
        if node == NIL {
            return Ok(false);
        }
        let unlinked = cursor.delete(node)?;
        self.nodes.retire(pool, unlinked);
        Ok(true)
    }

    fn contains<A: Access<Word = W>>(&self, a: &mut A, key: u64) -> Result<bool, A::Error> {
        Ok(self.cursor(a).lookup(key)? != NIL)
    }

    fn elements<A: Access<Word = W>>(&self, a: &mut A) -> Result<Vec<u64>, A::Error> {
        Ok(self.snapshot(a)?.keys())
    }
}
