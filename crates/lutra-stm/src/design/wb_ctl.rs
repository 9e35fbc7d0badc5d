//! Write-back with commit-time locking: writes are only buffered while the transaction
//! runs; the commit locks every written record (so locks are held only by committing
//! transactions, briefly), then validates and writes back.

use super::Design;
use crate::attempt::abort::Abort;
use crate::attempt::descriptor::Core;
use crate::global::stm::StmInner;

pub(crate) struct WriteBackCtl;

impl Design for WriteBackCtl {
    const LOCKS_AT_COMMIT: bool = true;

    fn before_first_write(
        &self,
        _stm: &StmInner,
        _tx: &mut Core,
        _orec: usize,
    ) -> Result<(), Abort> {
        Ok(())
    }

    #[inline(always)]
    fn lock_write_set(&self, stm: &StmInner, tx: &mut Core) -> Result<(), Abort> {
        for at in 0..tx.writes.len() {
            let orec = stm.orecs.index_of_record(tx.writes.entries()[at].record);
            tx.acquire_for_commit(stm, orec)?;
        }
        Ok(())
    }
}
