//! A shared table's storage in the engine: an index (key set and border, one `TVar`)
//! and one cell (`TVar`) per key.
//!
//! # Invariants
//! - The index maps each present key to its cell; a cell in the committed index holds
//!   a non-nil value. A removed key's cell is set to `Nil` and never used again (a key
//!   inserted again gets a new cell).
//! - `border` is the first border of the sequence part: keys `1..=border` are present
//!   and `border + 1` is absent (what `#` returns; Lua accepts any border).
//! - The index is a persistent map: a copy shares all of the original but the nodes
//!   either changes (O(log n) per change).
//! - Lookups borrow: the index and the cell are read by reference
//!   ([`Transaction::read_with`]), so a read of `t[k]` writes no shared memory (no
//!   reference count of the index, the cell or a short string value is touched).
//! - A transaction changes the index in place ([`Transaction::update_in_place`]): its
//!   first insert or removal writes a private copy (sharing every node), later ones
//!   change that copy, which is published by the commit. Its memory grows with what it
//!   changes, not with the number of changes times the index.
//! - A cell the transaction wrote stays allocated until the transaction's end, even
//!   when the same transaction removes its key: a removed cell moves to the index's
//!   `removed` list, which lives as long as that index version (a changed copy
//!   replaces older versions in place, so without it a cell created and removed by one
//!   transaction would be freed under its buffered write).
//!
//! # Conflicts (what concurrent transactions on one table conflict on)
//! | operation | reads | writes |
//! |-----------|-------|--------|
//! | read `t[k]` | index, cell of `k` if present | — |
//! | update `t[k] = v` (`k` present) | index, cell of `k` | cell of `k` |
//! | insert `t[k] = v` (`k` absent) | index | index (new cell) |
//! | remove `t[k] = nil` (`k` present) | index, cell of `k` | index, cell of `k` |
//! | `#t`, `pairs`, `next` | index (and the cells visited) | — |
//!
//! So updates of different existing keys never conflict, reads never conflict with
//! reads, and an insert or a removal conflicts with every transaction that read the
//! same table's index before it committed (every access reads it).
//!
//! # Reclamation
//! A table lives while a process holds a handle to it or a stored value refers to it
//! (`Arc`); a process's handle goes when its Lua state collects it. Cycles between
//! shared tables are not reclaimed. Replaced index versions are freed by the engine's
//! epochs, once no transaction can still be reading them.

use crate::shared::value::{Key, KeyRef, Stored};
use lutra_stm::{Abort, TVar, Transaction};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_TABLE_ID: AtomicU64 = AtomicU64::new(1);

/// One key's value.
#[derive(Debug)]
pub struct Cell {
    value: TVar<Stored>,
}

/// The key set: each present key's cell, and the first border.
#[derive(Debug, Default)]
pub(crate) struct Index {
    cells: imbl::HashMap<Key, Arc<Cell>>,
    border: i64,
    /// The cells removed by the transaction that wrote this index version. Its
    /// buffered writes to them are written back at its commit, so they must outlive
    /// it; a cell the transaction created has no other owner (see the module's
    /// invariants). A copy starts with none.
    removed: Vec<Arc<Cell>>,
}

/// A copy for a transaction to change: the same keys and border, and no removed
/// cells (those of the copied version live as long as that version).
impl Clone for Index {
    fn clone(&self) -> Self {
        Self {
            cells: self.cells.clone(),
            border: self.border,
            removed: Vec::new(),
        }
    }
}

lutra_stm::boxed_transactable!(Index);

impl Index {
    fn insert(&mut self, key: Key, cell: Arc<Cell>) {
        let extends = key.as_integer() == Some(self.border + 1);
        self.cells.insert(key, cell);
        if extends {
            while self.cells.contains_key(&KeyRef::Integer(self.border + 1)) {
                self.border += 1;
            }
        }
    }

    fn remove(&mut self, key: KeyRef<'_>) {
        self.removed.extend(self.cells.remove(&key));
        if let KeyRef::Integer(i) = key
            && (1..=self.border).contains(&i)
        {
            self.border = i - 1;
        }
    }
}

/// What `set` left to do after looking the key up.
enum Placed {
    /// The key's cell was written: nothing more.
    Done,
    /// The key's cell was emptied: the key leaves the index.
    Removed,
    /// The key is absent: its value (if not nil) needs a new cell.
    Absent(Stored),
}

/// A table stored in the engine, shared by every process that holds it.
#[derive(Debug)]
pub struct SharedTable {
    id: u64,
    index: TVar<Index>,
}

/// Dropping a table drops the tables it holds without recursion: a chain of tables
/// nested however deep (as `lutra.shared` accepts) must not overflow the stack of the
/// thread that drops the last reference.
impl Drop for SharedTable {
    fn drop(&mut self) {
        let mut orphans = Vec::new();
        self.take_children(&mut orphans);
        while let Some(child) = orphans.pop() {
            // Only the last owner empties a table; a table still held elsewhere keeps
            // its contents, and its own drop, later, does the same.
            if let Ok(mut child) = Arc::try_unwrap(child) {
                child.take_children(&mut orphans);
            }
        }
    }
}

impl SharedTable {
    /// Empties this table (owned exclusively, as its drop proves), moving the tables
    /// it holds to `orphans` instead of dropping them here.
    fn take_children(&mut self, orphans: &mut Vec<Arc<SharedTable>>) {
        let index = self.index.replace_mut(Index::default());
        for (_, cell) in index.cells {
            if let Ok(mut cell) = Arc::try_unwrap(cell)
                && let Stored::Table(child) = cell.value.replace_mut(Stored::Nil)
            {
                orphans.push(child);
            }
        }
    }
}

impl Default for SharedTable {
    fn default() -> Self {
        Self::new()
    }
}

impl SharedTable {
    /// A new empty table.
    pub fn new() -> Self {
        Self {
            id: NEXT_TABLE_ID.fetch_add(1, Ordering::Relaxed),
            index: TVar::new(Index::default()),
        }
    }

    /// The table's id (unique in this OS process), shown by `tostring`.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The value under `key` (`Nil` when absent). Writes no shared memory: the index
    /// and the cell are borrowed, and the value is copied out ([`Stored::detached`]).
    ///
    /// # Errors
    /// The abort that dooms the attempt.
    pub fn get(&self, tx: &mut Transaction<'_>, key: KeyRef<'_>) -> Result<Stored, Abort> {
        tx.read_with(&self.index, |index, tx| match index.cells.get(&key) {
            Some(cell) => tx.read_with(&cell.value, |value, _| Ok(value.detached())),
            None => Ok(Stored::Nil),
        })
    }

    /// Stores `value` under `key` (`Nil` removes the key).
    ///
    /// # Errors
    /// The abort that dooms the attempt.
    pub fn set(&self, tx: &mut Transaction<'_>, key: Key, value: Stored) -> Result<(), Abort> {
        let placed = tx.read_with(&self.index, |index, tx| {
            match index.cells.get(&key.view()) {
                Some(cell) => {
                    let removed = value.is_nil();
                    tx.write(&cell.value, value)?;
                    Ok(if removed {
                        Placed::Removed
                    } else {
                        Placed::Done
                    })
                }
                None => Ok(Placed::Absent(value)),
            }
        })?;
        match placed {
            Placed::Done => Ok(()),
            Placed::Removed => tx.update_in_place(&self.index, |index| index.remove(key.view())),
            Placed::Absent(value) if value.is_nil() => Ok(()),
            Placed::Absent(value) => {
                let cell = Arc::new(Cell {
                    value: TVar::new(value),
                });
                tx.update_in_place(&self.index, |index| index.insert(key, cell))
            }
        }
    }

    /// `#t`: a border of the table (the first one).
    ///
    /// # Errors
    /// The abort that dooms the attempt.
    pub fn border(&self, tx: &mut Transaction<'_>) -> Result<i64, Abort> {
        tx.read_with(&self.index, |index, _| Ok(index.border))
    }

    /// The present keys and their cells, in the index's order.
    ///
    /// # Errors
    /// The abort that dooms the attempt.
    pub fn keys(&self, tx: &mut Transaction<'_>) -> Result<Vec<(Key, Arc<Cell>)>, Abort> {
        tx.read_with(&self.index, |index, _| {
            Ok(index
                .cells
                .iter()
                .map(|(key, cell)| (key.clone(), cell.clone()))
                .collect())
        })
    }

    /// The number of present keys.
    ///
    /// # Errors
    /// The abort that dooms the attempt.
    pub fn count(&self, tx: &mut Transaction<'_>) -> Result<usize, Abort> {
        tx.read_with(&self.index, |index, _| Ok(index.cells.len()))
    }

    /// Replaces the contents with `entries` (nil values skipped): how a plain table
    /// copied into a new shared table is written, by the transaction storing it.
    ///
    /// # Errors
    /// The abort that dooms the attempt.
    pub fn fill(&self, tx: &mut Transaction<'_>, entries: &[(Key, Stored)]) -> Result<(), Abort> {
        let mut index = Index::default();
        for (key, value) in entries.iter().filter(|(_, value)| !value.is_nil()) {
            let cell = Arc::new(Cell {
                value: TVar::new(value.clone()),
            });
            index.insert(key.clone(), cell);
        }
        tx.write(&self.index, index)
    }
}

impl Cell {
    /// The cell's value (`Nil` once its key was removed), copied out as
    /// [`Stored::detached`] does.
    ///
    /// # Errors
    /// The abort that dooms the attempt.
    pub fn read(&self, tx: &mut Transaction<'_>) -> Result<Stored, Abort> {
        tx.read_with(&self.value, |value, _| Ok(value.detached()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lutra_stm::{Stm, TxDescriptor, TxOptions};

    fn string(s: &str) -> Key {
        Key::String(Arc::from(s.as_bytes()))
    }

    fn int(
        tx: &mut Transaction<'_>,
        table: &SharedTable,
        key: KeyRef<'_>,
    ) -> Result<Option<i64>, Abort> {
        Ok(match table.get(tx, key)? {
            Stored::Integer(i) => Some(i),
            _ => None,
        })
    }

    #[test]
    fn set_get_remove_and_border() {
        let stm = Stm::default();
        let table = SharedTable::new();
        stm.atomically(|tx| {
            for i in 1..=5 {
                table.set(tx, Key::Integer(i), Stored::Integer(i * 10))?;
            }
            table.set(tx, string("name"), Stored::Integer(7))
        });
        stm.atomically(|tx| {
            assert_eq!(table.border(tx)?, 5);
            assert_eq!(table.count(tx)?, 6);
            assert_eq!(int(tx, &table, KeyRef::Integer(3))?, Some(30));
            assert_eq!(int(tx, &table, KeyRef::String(b"name"))?, Some(7));
            assert_eq!(int(tx, &table, KeyRef::String(b"none"))?, None);
            table.set(tx, Key::Integer(3), Stored::Nil)?;
            assert_eq!(table.border(tx)?, 2);
            table.set(tx, Key::Integer(3), Stored::Integer(3))?;
            assert_eq!(
                table.border(tx)?,
                5,
                "re-inserting 3 extends the border over 4 and 5"
            );
            Ok(())
        });
    }

    #[test]
    fn removing_an_absent_key_writes_nothing() {
        let stm = Stm::default();
        let table = SharedTable::new();
        let before = stm.clock();
        stm.atomically(|tx| table.set(tx, string("x"), Stored::Nil));
        assert_eq!(
            stm.clock(),
            before,
            "a read-only commit does not tick the clock"
        );
    }

    #[test]
    fn a_removed_key_gets_a_new_cell_and_the_old_one_reads_nil() {
        let stm = Stm::default();
        let table = SharedTable::new();
        stm.atomically(|tx| table.set(tx, string("k"), Stored::Integer(1)));
        let old = stm.atomically(|tx| table.keys(tx)).remove(0).1;
        stm.atomically(|tx| table.set(tx, string("k"), Stored::Nil));
        stm.atomically(|tx| table.set(tx, string("k"), Stored::Integer(2)));
        stm.atomically(|tx| {
            assert!(old.read(tx)?.is_nil());
            assert_eq!(int(tx, &table, KeyRef::String(b"k"))?, Some(2));
            Ok(())
        });
    }

    /// Two attempts interleaved by hand: updating different existing keys commit
    /// both; an insert dooms a concurrent reader of the index.
    #[test]
    fn updates_of_different_keys_do_not_conflict_but_inserts_do() {
        let stm = Stm::default();
        let table = SharedTable::new();
        stm.atomically(|tx| {
            table.set(tx, string("a"), Stored::Integer(0))?;
            table.set(tx, string("b"), Stored::Integer(0))
        });
        let mut first = TxDescriptor::new(&stm).unwrap();
        let mut second = TxDescriptor::new(&stm).unwrap();
        first.begin(TxOptions::default());
        second.begin(TxOptions::default());
        table
            .set(&mut first.transaction(), string("a"), Stored::Integer(1))
            .unwrap();
        table
            .set(&mut second.transaction(), string("b"), Stored::Integer(2))
            .unwrap();
        first.commit().unwrap();
        second.commit().unwrap();

        first.begin(TxOptions::default());
        second.begin(TxOptions::default());
        assert_eq!(
            int(&mut first.transaction(), &table, KeyRef::String(b"a")),
            Ok(Some(1))
        );
        table
            .set(&mut second.transaction(), string("c"), Stored::Integer(3))
            .unwrap();
        second.commit().unwrap();
        let write = table.set(&mut first.transaction(), string("a"), Stored::Integer(5));
        assert!(
            write.is_err() || first.commit().is_err(),
            "the insert changed the index the first one read"
        );
        first.rollback(lutra_stm::AbortReason::Validation);
    }

    #[test]
    fn concurrent_transfers_conserve_the_total() {
        let stm = Stm::default();
        let table = Arc::new(SharedTable::new());
        stm.atomically(|tx| {
            for i in 0..8 {
                table.set(tx, Key::Integer(i), Stored::Integer(100))?;
            }
            Ok(())
        });
        std::thread::scope(|s| {
            for t in 0..4 {
                let (stm, table) = (stm.clone(), table.clone());
                s.spawn(move || {
                    for round in 0..500 {
                        let (from, to) = ((t + round) % 8, (t * 3 + round * 5 + 1) % 8);
                        stm.atomically(|tx| {
                            let a = int(tx, &table, KeyRef::Integer(from))?.unwrap();
                            table.set(tx, Key::Integer(from), Stored::Integer(a - 1))?;
                            let b = int(tx, &table, KeyRef::Integer(to))?.unwrap();
                            table.set(tx, Key::Integer(to), Stored::Integer(b + 1))
                        });
                    }
                });
            }
        });
        let total: i64 = stm.atomically(|tx| {
            let mut sum = 0;
            for i in 0..8 {
                sum += int(tx, &table, KeyRef::Integer(i))?.unwrap();
            }
            Ok(sum)
        });
        assert_eq!(total, 800);
    }

    #[test]
    fn fill_skips_nils_and_sets_the_border() {
        let stm = Stm::default();
        let table = SharedTable::new();
        let entries = vec![
            (Key::Integer(1), Stored::Integer(1)),
            (Key::Integer(2), Stored::Integer(2)),
            (string("gone"), Stored::Nil),
        ];
        stm.atomically(|tx| table.fill(tx, &entries));
        assert_eq!(
            stm.atomically(|tx| Ok((table.border(tx)?, table.count(tx)?))),
            (2, 2)
        );
    }
}
