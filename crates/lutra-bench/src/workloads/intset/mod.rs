//! Integer sets built on the STM, the workload of the `intset` benchmark (after
//! tinySTM's and synchrobench's `intset`).
//!
//! Each structure is a file offering the same operations, written once over
//! [`Access`] so that it runs transactionally on [`TVar<u64>`](lutra_stm::TVar) words
//! or directly on [`PlainWord`]s (the sequential and lock-based baselines):
//!
//! | structure | file | shape |
//! |-----------|------|-------|
//! | [`LinkedList`] | `linked_list.rs` | sorted singly linked list with a head sentinel |
//! | [`SkipList`] | `skip_list.rs` | skip list, geometric levels (p = 1/2) |
//! | [`RbTree`] | `rb_tree.rs` | red-black tree with parent links (STAMP's `rbtree`, after Java's `TreeMap`); its checker in `rb_check.rs` |
//! | [`HashSet`] | `hash_set.rs` | fixed bucket array of unsorted chains |
//!
//! Nodes live in an [`Arena`] and are recycled through per-thread [`NodePool`]s.
//! The wrappers that threads share are in `shared.rs`: [`StmIntSet`] (a set and its
//! engine), [`Sequential`] (one thread, no synchronization), and global `Mutex` /
//! `RwLock` locking of a [`Sequential`], all behind [`SharedIntSet`].

mod arena;
mod hash_set;
mod linked_list;
mod memory;
mod rb_check;
mod rb_tree;
mod shared;
mod skip_list;

pub use arena::{Arena, NIL, NodePool};
pub use hash_set::HashSet;
pub use linked_list::LinkedList;
pub use memory::{Access, Direct, PlainWord, Word};
pub use rb_check::RbSnapshot;
pub use rb_tree::RbTree;
pub use shared::{
    SITE_CONTAINS, SITE_INSERT, SITE_REMOVE, Sequential, SetLock, SharedIntSet, StmIntSet,
};
pub use skip_list::{MAX_LEVELS, SkipList};

/// A set of `u64` keys, written over an [`Access`] to its words.
///
/// The operations may be called inside a larger transaction (they compose), provided
/// the caller follows the [`NodePool`] protocol around each attempt; [`StmIntSet`] and
/// [`Sequential`] do that for single operations.
pub trait IntSet: Send + Sync + Sized {
    /// The words the set is built of.
    type Word: Word;

    /// The structure's short name (`"list"`, `"skip"`, `"rbtree"`, `"hash"`).
    const NAME: &'static str;

    /// An empty set, sized for about `expected` elements (buckets, levels).
    fn with_capacity(expected: usize) -> Self;

    /// A node pool for one thread using this set.
    fn pool(&self) -> NodePool;

    /// Adds `key`; `Ok(false)` if it was already present.
    ///
    /// # Errors
    /// The access's error (a transaction's abort): return it with `?`.
    fn insert<A: Access<Word = Self::Word>>(
        &self,
        access: &mut A,
        pool: &mut NodePool,
        key: u64,
    ) -> Result<bool, A::Error>;

    /// Removes `key`; `Ok(false)` if it was absent.
    ///
    /// # Errors
    /// As [`IntSet::insert`].
    fn remove<A: Access<Word = Self::Word>>(
        &self,
        access: &mut A,
        pool: &mut NodePool,
        key: u64,
    ) -> Result<bool, A::Error>;

    /// Whether `key` is present.
    ///
    /// # Errors
    /// As [`IntSet::insert`].
    fn contains<A: Access<Word = Self::Word>>(
        &self,
        access: &mut A,
        key: u64,
    ) -> Result<bool, A::Error>;

    /// Every key, ascending (reads the whole set: for checks, not for benchmarks).
    ///
    /// # Errors
    /// As [`IntSet::insert`].
    fn elements<A: Access<Word = Self::Word>>(&self, access: &mut A) -> Result<Vec<u64>, A::Error>;
}

/// The structures, for command lines and sweeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Structure {
    /// [`LinkedList`].
    List,
    /// [`SkipList`].
    Skip,
    /// [`RbTree`].
    RbTree,
    /// [`HashSet`].
    Hash,
}

impl Structure {
    /// Every structure, in report order.
    pub const ALL: [Structure; 4] = [Self::List, Self::Skip, Self::RbTree, Self::Hash];

    /// The name used on command lines and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::List => LinkedList::<PlainWord>::NAME,
            Self::Skip => SkipList::<PlainWord>::NAME,
            Self::RbTree => RbTree::<PlainWord>::NAME,
            Self::Hash => HashSet::<PlainWord>::NAME,
        }
    }

    /// Parses a name (`list`, `skip`, `rbtree`, `hash`, and a few aliases).
    ///
    /// # Errors
    /// A message naming the accepted values.
    pub fn from_name(name: &str) -> Result<Self, String> {
        match name.to_ascii_lowercase().as_str() {
            "list" | "linked_list" | "ll" => Ok(Self::List),
            "skip" | "skip_list" | "sl" => Ok(Self::Skip),
            "rbtree" | "rb" | "rb_tree" | "tree" => Ok(Self::RbTree),
            "hash" | "hash_set" | "hs" => Ok(Self::Hash),
            _ => Err(format!(
                "unknown structure `{name}` (expected list, skip, rbtree or hash)"
            )),
        }
    }

    /// The default initial size: 256 for the list (its operations are O(n)), 1024
    /// for the others.
    pub fn default_initial(self) -> usize {
        match self {
            Self::List => 256,
            _ => 1024,
        }
    }
}
