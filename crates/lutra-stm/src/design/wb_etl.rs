//! Write-back with encounter-time locking: a record is locked at the first write to a
//! word it guards and stays locked until commit or rollback, so write-write conflicts
//! are found at once; the commit only validates and writes back.
//!
//! # Invariants
//! - The snapshot `rv` is never older than the version a held record had when it was
//!   locked: reads of words under held records (straight from memory) stay opaque.

use super::Design;
use crate::attempt::abort::Abort;
use crate::attempt::descriptor::Core;
use crate::global::stm::StmInner;

pub(crate) struct WriteBackEtl;

impl Design for WriteBackEtl {
    const LOCKS_AT_COMMIT: bool = false;

    fn before_first_write(&self, stm: &StmInner, tx: &mut Core, orec: usize) -> Result<(), Abort> {
        // Holding a record before its commit, the attempt can be killed: its commit
        // must look at its status word (not straight).
        tx.mark_not_straight();
        let version = tx.acquire(stm, orec)?;
        // Words under a record this attempt holds are read straight from memory, so
        // memory must belong to the snapshot: move the snapshot past the version found.
        if version > tx.rv {
            tx.extend(stm)?;
        }
        Ok(())
    }

    fn lock_write_set(&self, _stm: &StmInner, _tx: &mut Core) -> Result<(), Abort> {
        Ok(())
    }
}
