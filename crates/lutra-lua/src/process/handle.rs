//! The Lua face of a process: a userdata whose methods (`join`, `send`, `id`) are the
//! Lua functions of `prelude.lua`.

use crate::intern::push_interned;
use crate::process::ProcessCore;
use mlua::{Lua, UserData, UserDataFields, UserDataMethods};
use std::sync::Arc;

/// Registry key of the method table that `prelude.lua` returns for processes.
pub(crate) const PROCESS_METHODS_KEY: &str = "lutra.methods.process";

/// A reference to a process, held by any process.
pub(crate) struct ProcessHandle(pub(crate) Arc<ProcessCore>);

impl ProcessHandle {
    /// The (interned) userdata for this process in `lua`.
    pub(crate) fn push(self, lua: &Lua) -> mlua::Result<mlua::Value> {
        let address = Arc::as_ptr(&self.0).cast();
        push_interned(lua, address, || self)
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
