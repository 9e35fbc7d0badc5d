//! The Lua face of a process: a userdata whose methods (`join`, `send`, `id`) are the
//! Lua functions of `prelude.lua` (`send` with its native fast path in front,
//! `api/native/mailbox.rs`).
//!
//! # Invariants
//! - A process's userdata carries the process's address, tagged with its low bit
//!   set ([`PROCESS_TAG`]), as its user value (a light userdata): the native
//!   functions find the process with no typed borrow, and tell it from a channel's
//!   handle (whose user value is an untagged address, `channel/handle.rs`). Lua code
//!   cannot set or change a light user value (`api/native`'s guard).

use crate::intern::push_interned_marked;
use crate::process::ProcessCore;
use mlua::{Lua, UserData, UserDataFields, UserDataMethods};
use std::sync::Arc;

/// The bit that tells a process handle's user value from a channel handle's (both
/// addresses of word-aligned objects, whose low bit is clear).
pub(crate) const PROCESS_TAG: usize = 1;

/// Registry key of the method table that `prelude.lua` returns for processes.
pub(crate) const PROCESS_METHODS_KEY: &str = "lutra.methods.process";

/// A reference to a process, held by any process.
pub(crate) struct ProcessHandle(pub(crate) Arc<ProcessCore>);

impl ProcessHandle {
    /// The (interned) userdata for this process in `lua`.
    pub(crate) fn push(self, lua: &Lua) -> mlua::Result<mlua::Value> {
        let address: *const std::ffi::c_void = Arc::as_ptr(&self.0).cast();
        let tagged = (address as usize | PROCESS_TAG) as *mut std::ffi::c_void;
        push_interned_marked(lua, address, tagged, || self)
    }
}

impl UserData for ProcessHandle {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_meta_field_with("__index", |lua| {
            lua.named_registry_value::<mlua::Table>(PROCESS_METHODS_KEY)
        });
        fields.add_meta_field("__name", "lutra.process");
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method("__tostring", |_, this, ()| {
            Ok(format!("process#{} ({})", this.0.id(), this.0.origin()))
        });
    }
}
