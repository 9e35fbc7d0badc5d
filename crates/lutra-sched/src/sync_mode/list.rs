//! A transactional singly linked list of nodes built from `TVar`s: the FIFO behind
//! the transactional run queue and [`SyncQueue`](super::SyncQueue).
//!
//! Every operation runs inside a runtime transaction ([`Tx`]); nodes are reached only
//! through words read in that transaction, so a node pointer is valid for the rest of
//! the attempt (an unlinked node is freed through `free_on_commit`, after every
//! transaction that could still read it has ended).
//!
//! # Invariants
//! - `head` and `tail` are both 0 (empty) or both point to nodes; following `next`
//!   from `head` reaches `tail`, whose `next` is 0.
//! - A node's `item` never changes while the node is linked or awaiting release;
//!   other transactions read it in place (the run queue's scans), so a node owns its
//!   item until it is released, unless the release function says otherwise.
//! - Pushing to the back writes `tail` and the last node's `next` (or `head` when
//!   empty); popping the front writes `head` (and `tail` when it empties): with two or
//!   more nodes, producers and consumers touch disjoint words.

use super::engine::Tx;
use lutra_stm::{Abort, TVar};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;

/// One element.
pub(crate) struct Node<T> {
    next: TVar<usize>,
    pub(crate) item: ManuallyDrop<T>,
}

impl<T> Node<T> {
    /// A new, unlinked node (owned by the caller until a push commits).
    pub(crate) fn new(item: T) -> *mut Node<T> {
        Box::into_raw(Box::new(Node {
            next: TVar::new(0),
            item: ManuallyDrop::new(item),
        }))
    }
}

/// Frees a node and drops its item (the list owned it).
///
/// # Safety
/// `addr` is a node of type `T` from [`Node::new`], released once.
pub(crate) unsafe fn release_dropping_item<T>(addr: usize, _size: usize) {
    // SAFETY: guaranteed by the caller.
    let mut node = unsafe { Box::from_raw(addr as *mut Node<T>) };
    // SAFETY: the item was not moved out (the caller's choice of release).
    unsafe { ManuallyDrop::drop(&mut node.item) };
}

/// Frees a node whose item was moved out by the transaction that unlinked it.
///
/// # Safety
/// As [`release_dropping_item`].
pub(crate) unsafe fn release_keeping_item<T>(addr: usize, _size: usize) {
    // SAFETY: guaranteed by the caller; `ManuallyDrop` leaves the item alone.
    drop(unsafe { Box::from_raw(addr as *mut Node<T>) });
}

/// Where a node was found: its predecessor (0 for the head) and itself.
#[derive(Clone, Copy)]
pub(crate) struct Link<T> {
    prev: usize,
    node: *mut Node<T>,
}

impl<T> Link<T> {
    /// The node's item. Valid until the attempt that found it ends.
    pub(crate) fn item(&self) -> &T {
        // SAFETY: the node was reached in the running attempt (see the module docs).
        unsafe { &(*self.node).item }
    }
}

/// The list: words only, the nodes on the heap.
pub(crate) struct TxList<T> {
    head: TVar<usize>,
    tail: TVar<usize>,
    _items: PhantomData<Box<Node<T>>>,
}

impl<T> TxList<T> {
    pub(crate) fn new() -> Self {
        Self {
            head: TVar::new(0),
            tail: TVar::new(0),
            _items: PhantomData,
        }
    }

    fn node<'a>(addr: usize) -> &'a Node<T> {
        // SAFETY: `addr` was read from a list word in the running attempt, which
        // keeps the node allocated (module docs).
        unsafe { &*(addr as *const Node<T>) }
    }

    /// Whether the list may hold a node, judged without a transaction (a hint: see
    /// [`peek`](super::engine::peek)).
    #[inline]
    pub(crate) fn may_hold_a_node(&self) -> bool {
        super::engine::peek(&self.head) != 0
    }

    /// Whether the list is empty (reads `head`: a `retry` then waits for a push).
    pub(crate) fn is_empty(&self, tx: &mut Tx<'_>) -> Result<bool, Abort> {
        Ok(tx.read(&self.head)? == 0)
    }

    /// Links `node` at the back.
    ///
    /// # Safety
    /// `node` comes from [`Node::new`] and was never linked (its `next` is 0); once
    /// the attempt commits, the list owns it.
    pub(crate) unsafe fn push_back(
        &self,
        tx: &mut Tx<'_>,
        node: *mut Node<T>,
    ) -> Result<(), Abort> {
        let tail = tx.read(&self.tail)?;
        if tail == 0 {
            tx.write(&self.head, node as usize)?;
        } else {
            tx.write(&Self::node(tail).next, node as usize)?;
        }
        tx.write(&self.tail, node as usize)
    }

    /// Links at the back a node unlinked (from this or another list) in this attempt.
    ///
    /// # Safety
    /// `node` was unlinked in this attempt and is linked nowhere else; once the
    /// attempt commits, this list owns it.
    pub(crate) unsafe fn push_back_unlinked(
        &self,
        tx: &mut Tx<'_>,
        node: *mut Node<T>,
    ) -> Result<(), Abort> {
        // SAFETY: the node is the caller's (unlinked in this attempt).
        tx.write(unsafe { &(*node).next }, 0)?;
        // SAFETY: forwarded contract; its `next` is 0 once this attempt commits.
        unsafe { self.push_back(tx, node) }
    }

    /// The first node whose item satisfies `suits`.
    pub(crate) fn find(
        &self,
        tx: &mut Tx<'_>,
        mut suits: impl FnMut(&T) -> bool,
    ) -> Result<Option<Link<T>>, Abort> {
        let mut prev = 0;
        let mut at = tx.read(&self.head)?;
        while at != 0 {
            let node = Self::node(at);
            if suits(&node.item) {
                return Ok(Some(Link {
                    prev,
                    node: at as *mut Node<T>,
                }));
            }
            prev = at;
            at = tx.read(&node.next)?;
        }
        Ok(None)
    }

    /// The first node, if any.
    pub(crate) fn first(&self, tx: &mut Tx<'_>) -> Result<Option<Link<T>>, Abort> {
        self.find(tx, |_| true)
    }

    /// Unlinks the node of `link` (found in this attempt); it is the caller's again
    /// once the attempt commits: push it again, or free it with [`TxList::free`].
    pub(crate) fn unlink(&self, tx: &mut Tx<'_>, link: Link<T>) -> Result<*mut Node<T>, Abort> {
        let node = Self::node(link.node as usize);
        let next = tx.read(&node.next)?;
        if link.prev == 0 {
            tx.write(&self.head, next)?;
        } else {
            tx.write(&Self::node(link.prev).next, next)?;
        }
        if next == 0 {
            tx.write(&self.tail, link.prev)?;
        }
        Ok(link.node)
    }

    /// Frees an unlinked node once this attempt commits and no transaction can read it
    /// any more, with `release` ([`release_dropping_item`] or [`release_keeping_item`]).
    ///
    /// # Safety
    /// `node` was unlinked in this attempt and is not pushed again; `release` matches
    /// what happened to its item.
    pub(crate) unsafe fn free(
        &self,
        tx: &mut Tx<'_>,
        node: *mut Node<T>,
        release: lutra_stm::Release,
    ) -> Result<(), Abort> {
        // SAFETY: forwarded contract; `unlink` wrote the word that reached the node.
        unsafe { tx.free_on_commit(node as usize, release) }
    }
}

impl<T> Drop for TxList<T> {
    fn drop(&mut self) {
        // Exclusive access: no transaction can reach the list any more.
        let mut at = self.head.get_mut();
        while at != 0 {
            // SAFETY: a linked node, owned by the list, released once.
            let next = unsafe { (*(at as *mut Node<T>)).next.get_mut() };
            // SAFETY: as above.
            unsafe { release_dropping_item::<T>(at, 0) };
            at = next;
        }
    }
}

// SAFETY: the list owns its items (moved in by pushes, out by pops on any thread).
unsafe impl<T: Send> Send for TxList<T> {}
// SAFETY: shared access goes through transactions; items are only read in place
// (`Link::item`), which needs `T: Sync`.
unsafe impl<T: Send + Sync> Sync for TxList<T> {}
