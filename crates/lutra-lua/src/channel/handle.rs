//! The Lua face of a channel: a userdata whose methods (`send`, `receive`,
//! `try_receive`, `close`, `values`) are the Lua functions of `prelude.lua`.

use crate::channel::Channel;
use crate::intern::push_interned;
use mlua::{Lua, UserData, UserDataFields, UserDataMethods};
use std::sync::Arc;

/// Registry key of the method table that `prelude.lua` returns for channels.
pub(crate) const CHANNEL_METHODS_KEY: &str = "lutra.methods.channel";

/// A process's reference to a channel.
pub(crate) struct ChannelHandle(pub(crate) Arc<Channel>);

impl ChannelHandle {
    /// The (interned) userdata for this channel in `lua`.
    pub(crate) fn push(self, lua: &Lua) -> mlua::Result<mlua::Value> {
        let address = Arc::as_ptr(&self.0).cast();
        push_interned(lua, address, || self)
    }
}

impl UserData for ChannelHandle {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_meta_field_with("__index", |lua| {
            lua.named_registry_value::<mlua::Table>(CHANNEL_METHODS_KEY)
        });
        fields.add_meta_field("__name", "lutra.channel");
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method("__tostring", |_, this, ()| {
            Ok(format!("channel#{}", this.0.id()))
        });
    }
}
