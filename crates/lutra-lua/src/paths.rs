//! Where `require` looks: every process's `package.path` and `package.cpath`.
//!
//! The defaults are those of Debian's `lua5.4` (its multiarch directory included),
//! preceded by LuaRocks' user tree (`~/.luarocks`, where `luarocks install --local`
//! puts modules), so that a module installed by the distribution or by LuaRocks is
//! found as `lua5.4` plus `eval $(luarocks path)` finds it. The environment changes
//! them as `lua5.4`'s package library does (`loadlib.c`'s `setpath`):
//! `LUA_PATH_5_4`, else `LUA_PATH`, replaces `package.path` (and `LUA_CPATH_5_4`,
//! else `LUA_CPATH`, `package.cpath`), a `;;` in it standing for the default.
//!
//! # Invariants
//! - The strings are computed once per runtime (in its [`Options`](crate::Options))
//!   and set in each new state before its baseline is taken, so a recycled state
//!   starts again with them whatever the last process did to `package.path`.
//! - With `ignore_env` (`lutra -E`) the environment is not read at all: the paths are
//!   exactly Debian's `lua5.4 -E` defaults, without the user tree (found through
//!   `HOME`).

/// Debian's `LUA_PATH_DEFAULT` for Lua 5.4.
const SYSTEM_PATH: &str = "/usr/local/share/lua/5.4/?.lua;/usr/local/share/lua/5.4/?/init.lua;\
/usr/local/lib/lua/5.4/?.lua;/usr/local/lib/lua/5.4/?/init.lua;\
/usr/share/lua/5.4/?.lua;/usr/share/lua/5.4/?/init.lua;./?.lua;./?/init.lua";

/// The directory of Debian's multiarch C modules for this machine's architecture
/// (`/usr/lib/x86_64-linux-gnu/lua/5.4/?.so;` on amd64), or nothing where Debian has
/// none.
const MULTIARCH_CPATH: &str = if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
    "/usr/lib/x86_64-linux-gnu/lua/5.4/?.so;"
} else if cfg!(all(target_os = "linux", target_arch = "aarch64")) {
    "/usr/lib/aarch64-linux-gnu/lua/5.4/?.so;"
} else {
    ""
};

/// `package.path` and `package.cpath` for every process of a runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackagePaths {
    /// `package.path`: where `require` looks for Lua modules.
    pub path: String,
    /// `package.cpath`: where `require` looks for C modules.
    pub cpath: String,
}

impl PackagePaths {
    /// The paths `lua5.4` would use in this environment, with LuaRocks' user tree
    /// (under `HOME`) before the system directories; with `ignore_env`, the defaults
    /// alone (as `lua5.4 -E`). Never fails: an unset or non-UTF-8 variable counts as
    /// unset.
    pub fn new(ignore_env: bool) -> Self {
        let var = |name: &str| {
            if ignore_env {
                None
            } else {
                std::env::var(name).ok()
            }
        };
        let home = var("HOME").filter(|home| !home.is_empty());
        let (default_path, default_cpath) = defaults(home.as_deref());
        Self {
            path: from_env(
                var("LUA_PATH_5_4").or_else(|| var("LUA_PATH")),
                &default_path,
            ),
            cpath: from_env(
                var("LUA_CPATH_5_4").or_else(|| var("LUA_CPATH")),
                &default_cpath,
            ),
        }
    }

    /// Sets `package.path` and `package.cpath` of `lua`.
    ///
    /// # Errors
    /// When `lua` has no `package` table, or out of memory.
    pub(crate) fn install(&self, lua: &mlua::Lua) -> mlua::Result<()> {
        let package: mlua::Table = lua.globals().get("package")?;
        package.set("path", self.path.as_str())?;
        package.set("cpath", self.cpath.as_str())
    }
}

impl Default for PackagePaths {
    /// The paths of this environment ([`PackagePaths::new`] reading it).
    fn default() -> Self {
        Self::new(false)
    }
}

/// The default `package.path` and `package.cpath`: LuaRocks' user tree under
/// `home` (if known), then Debian's `lua5.4` defaults.
fn defaults(home: Option<&str>) -> (String, String) {
    let cpath_system = format!(
        "/usr/local/lib/lua/5.4/?.so;{MULTIARCH_CPATH}/usr/lib/lua/5.4/?.so;\
         /usr/local/lib/lua/5.4/loadall.so;./?.so"
    );
    match home {
        Some(home) => (
            format!(
                "{home}/.luarocks/share/lua/5.4/?.lua;{home}/.luarocks/share/lua/5.4/?/init.lua;\
                 {SYSTEM_PATH}"
            ),
            format!("{home}/.luarocks/lib/lua/5.4/?.so;{cpath_system}"),
        ),
        None => (SYSTEM_PATH.to_owned(), cpath_system),
    }
}

/// A path variable's value as `lua5.4` reads it: unset gives `default`; the first
/// `;;` in it is replaced by `;default;` (without a `;` at an end with nothing
/// beyond it).
fn from_env(value: Option<String>, default: &str) -> String {
    let Some(value) = value else {
        return default.to_owned();
    };
    let Some(mark) = value.find(";;") else {
        return value;
    };
    let (prefix, suffix) = (&value[..mark], &value[mark + 2..]);
    let mut path = String::with_capacity(value.len() + default.len() + 2);
    if !prefix.is_empty() {
        path.push_str(prefix);
        path.push(';');
    }
    path.push_str(default);
    if !suffix.is_empty() {
        path.push(';');
        path.push_str(suffix);
    }
    path
}

#[cfg(test)]
mod tests {
    use super::{defaults, from_env};

    #[test]
    fn double_semicolon_stands_for_the_default() {
        let d = "D1;D2";
        assert_eq!(from_env(None, d), d);
        assert_eq!(from_env(Some("a;b".into()), d), "a;b");
        assert_eq!(from_env(Some(";;".into()), d), "D1;D2");
        assert_eq!(from_env(Some("a;;".into()), d), "a;D1;D2");
        assert_eq!(from_env(Some(";;b".into()), d), "D1;D2;b");
        assert_eq!(from_env(Some("a;;b;;c".into()), d), "a;D1;D2;b;;c");
    }

    #[test]
    fn the_user_tree_comes_first_and_debian_dirs_follow() {
        let (path, cpath) = defaults(Some("/h"));
        assert!(path.starts_with("/h/.luarocks/share/lua/5.4/?.lua;"));
        assert!(path.ends_with(";./?.lua;./?/init.lua"));
        assert!(cpath.starts_with("/h/.luarocks/lib/lua/5.4/?.so;/usr/local/lib/lua/5.4/?.so;"));
        assert!(cpath.ends_with(";./?.so"));
        let (path, _) = defaults(None);
        assert!(path.starts_with("/usr/local/share/lua/5.4/?.lua;"));
    }
}
