//! The Lua face of a channel: a userdata whose methods (`send`, `receive`,
//! `try_receive`, `close`, `values`) are the Lua functions of `prelude.lua` (`send`
//! and `receive` with their native fast paths in front, `api/native`).
//!
//! # Invariants
//! - A channel's userdata carries the channel's address as its user value (a light
//!   userdata), and the interning cache maps that address to the userdata: the
//!   native functions find the channel with no typed borrow, and trust the address
//!   only when the cache agrees (`api::native::channel_at`), since `debug.setuservalue`
//!   can change a user value.

use crate::channel::Channel;
use crate::intern::push_interned_marked;
use mlua::{Lua, UserData, UserDataFields, UserDataMethods};
use std::sync::Arc;

/// Registry key of the method table that `prelude.lua` returns for channels.
pub(crate) const CHANNEL_METHODS_KEY: &str = "lutra.methods.channel";

/// A process's reference to a channel.
pub(crate) struct ChannelHandle(pub(crate) Arc<Channel>);

impl ChannelHandle {
    /// The (interned) userdata for this channel in `lua`.
    pub(crate) fn push(self, lua: &Lua) -> mlua::Result<mlua::Value> {
        let address: *const std::ffi::c_void = Arc::as_ptr(&self.0).cast();
        push_interned_marked(lua, address, address.cast_mut(), || self)
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
            Ok(crate::api::texts::channel_name(this.0.id()))
        });
    }
}
