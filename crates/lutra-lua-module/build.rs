//! Marks the module "never unload" (`-z nodelete`): the host's `lua_close` calls
//! `dlclose` on C modules, but worker threads started by the module may still be
//! running its code then.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    }
}
