//! One Lua userdata per runtime object per process: pushing the same object twice
//! gives the same userdata, so handles compare equal with `==` and `rawequal` and work
//! as table keys. The cache is a weak-valued registry table keyed by the object's
//! address.

use mlua::{LightUserData, Lua, Table, UserData, ffi};
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
    push_interned_with(lua, address, make, None)
}

/// As [`push_interned`], and a new userdata gets `marker` (a light userdata) as its
/// user value: the native message path finds the object through it
/// (`api/native`).
pub(crate) fn push_interned_marked<T: UserData + Send + Sync + 'static>(
    lua: &Lua,
    address: *const c_void,
    marker: *mut c_void,
    make: impl FnOnce() -> T,
) -> mlua::Result<mlua::Value> {
    push_interned_with(lua, address, make, Some(marker))
}

fn push_interned_with<T: UserData + Send + Sync + 'static>(
    lua: &Lua,
    address: *const c_void,
    make: impl FnOnce() -> T,
    marker: Option<*mut c_void>,
) -> mlua::Result<mlua::Value> {
    let cache = handles(lua)?;
    let key = LightUserData(address.cast_mut());
    let existing: mlua::Value = cache.raw_get(key)?;
    if !existing.is_nil() {
        return Ok(existing);
    }
    let userdata = lua.create_userdata(make())?;
    if let Some(marker) = marker {
        // SAFETY: pushes the marker and sets it as the user value of the userdata
        // mlua pushed (a full userdata with one user value slot).
        unsafe {
            lua.exec_raw::<()>(&userdata, |state| {
                ffi::lua_pushlightuserdata(state, marker);
                ffi::lua_setiuservalue(state, -2, 1);
            })?;
        }
    }
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
