//! STM designs: when write locks are taken. Each design is a file offering the same
//! two operations; everything else (reads, validation, commit, rollback) is shared.
//!
//! | design | file | locks a written location |
//! |--------|------|--------------------------|
//! | `WriteBackCtl` | `wb_ctl.rs` | at commit (commit-time locking, TL2-style) |
//! | `WriteBackEtl` | `wb_etl.rs` | at its first write (encounter-time locking, tinySTM's default) |

mod wb_ctl;
mod wb_etl;

use crate::api::config::DesignKind;
use crate::attempt::abort::Abort;
use crate::attempt::descriptor::Core;
use crate::global::stm::StmInner;

/// The operations in which designs differ.
pub(crate) trait Design: Sync {
    /// Whether every record is locked at commit only (never before).
    const LOCKS_AT_COMMIT: bool;

    /// Before the first buffered write to a word guarded by record `orec`.
    fn before_first_write(&self, stm: &StmInner, tx: &mut Core, orec: usize) -> Result<(), Abort>;

    /// At commit, before the point of no return: afterwards every record guarding a
    /// written word is locked by `tx`.
    fn lock_write_set(&self, stm: &StmInner, tx: &mut Core) -> Result<(), Abort>;
}

impl StmInner {
    /// Whether the configured design locks only at commit (`wb_ctl.rs`), so an
    /// attempt holds no lock before its commit: the inlined write's room and the
    /// straight commit (`straight.rs`) apply only then.
    #[inline(always)]
    pub(crate) fn locks_at_commit(&self) -> bool {
        match self.design_kind {
            DesignKind::WriteBackCtl => wb_ctl::WriteBackCtl::LOCKS_AT_COMMIT,
            DesignKind::WriteBackEtl => wb_etl::WriteBackEtl::LOCKS_AT_COMMIT,
        }
    }

    /// [`Design::before_first_write`] of the configured design, dispatched statically
    /// (a predictable branch, no indirect call).
    #[inline]
    pub(crate) fn before_first_write(&self, tx: &mut Core, orec: usize) -> Result<(), Abort> {
        match self.design_kind {
            DesignKind::WriteBackCtl => wb_ctl::WriteBackCtl.before_first_write(self, tx, orec),
            DesignKind::WriteBackEtl => wb_etl::WriteBackEtl.before_first_write(self, tx, orec),
        }
    }

    /// [`Design::lock_write_set`] of the configured design, dispatched statically.
    #[inline]
    pub(crate) fn lock_write_set(&self, tx: &mut Core) -> Result<(), Abort> {
        match self.design_kind {
            DesignKind::WriteBackCtl => wb_ctl::WriteBackCtl.lock_write_set(self, tx),
            DesignKind::WriteBackEtl => wb_etl::WriteBackEtl.lock_write_set(self, tx),
        }
    }
}
