//! Write-back with encounter-time locking: a record is locked at the first write to a
//! word it guards and stays locked until commit or rollback, so write-write conflicts
//! are found at once; the commit only validates and writes back.

use super::Design;
use crate::abort::Abort;
use crate::descriptor::Core;
use crate::stm::StmInner;

pub(crate) struct WriteBackEtl;

impl Design for WriteBackEtl {
    fn before_first_write(&self, stm: &StmInner, tx: &mut Core, orec: usize) -> Result<(), Abort> {
        tx.acquire(stm, orec)
    }

    fn lock_write_set(&self, _stm: &StmInner, _tx: &mut Core) -> Result<(), Abort> {
        Ok(())
    }
}
