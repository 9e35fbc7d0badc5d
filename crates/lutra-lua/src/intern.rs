//! One Lua userdata per runtime object per process: pushing the same object twice
//! gives the same userdata, so handles compare equal with `==` and `rawequal` and work
//! as table keys. The cache is a weak-valued registry table keyed by the object's
//! address.

use mlua::{AnyUserData, LightUserData, Lua, Table, UserData};
use std::ffi::c_void;

/// Registry key of the cache (a field of the registry, so the native message path
/// reads it with the C API too).
pub(crate) const HANDLES_KEY: &std::ffi::CStr = c"lutra.handles";

/// [`HANDLES_KEY`] for mlua's named registry values.
const HANDLES_NAME: &str = match HANDLES_KEY.to_str() {
    Ok(name) => name,
    Err(_) => panic!("the key is ASCII"),
};

/// The userdata of the object at `address`, created by `make` the first time.
pub(crate) fn push_interned<T: UserData + Send + Sync + 'static>(
    lua: &Lua,
    address: *const c_void,
    make: impl FnOnce() -> T,
) -> mlua::Result<mlua::Value> {
    push_interned_with(lua, address, make, |_| Ok(()))
}

/// As [`push_interned`], and `created` runs on the userdata when it is new.
pub(crate) fn push_interned_with<T: UserData + Send + Sync + 'static>(
    lua: &Lua,
    address: *const c_void,
    make: impl FnOnce() -> T,
    created: impl FnOnce(&AnyUserData) -> mlua::Result<()>,
) -> mlua::Result<mlua::Value> {
    let cache = handles(lua)?;
    let key = LightUserData(address.cast_mut());
    let existing: mlua::Value = cache.raw_get(key)?;
    if !existing.is_nil() {
        return Ok(existing);
    }
    let userdata = lua.create_userdata(make())?;
    created(&userdata)?;
    let handle = mlua::Value::UserData(userdata);
    cache.raw_set(key, &handle)?;
    Ok(handle)
}

/// The cache itself (a weak-valued table: object address → userdata).
pub(crate) fn handles(lua: &Lua) -> mlua::Result<Table> {
    if let Ok(table) = lua.named_registry_value::<Table>(HANDLES_NAME) {
        return Ok(table);
    }
    let table = lua.create_table()?;
    let weak_values = lua.create_table()?;
    weak_values.set("__mode", "v")?;
    table.set_metatable(Some(weak_values))?;
    lua.set_named_registry_value(HANDLES_NAME, &table)?;
    Ok(table)
}
