//! Builds the C shim (`c/shim.c`) into the library and gives the shared library its
//! soname (`liblutra.so.0`), so that programs link against the ABI's major version.

fn main() {
    println!("cargo:rerun-if-changed=c/shim.c");
    println!("cargo:rerun-if-changed=c/capi.h");
    println!("cargo:rerun-if-changed=../../include/lutra/stm.h");
    cc::Build::new()
        .file("c/shim.c")
        .include("c")
        .include("../../include")
        .flag_if_supported("-std=gnu11")
        .warnings(true)
        .extra_warnings(true)
        .compile("lutra_shim");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let vendor = std::env::var("CARGO_CFG_TARGET_VENDOR").unwrap_or_default();
    if os != "windows" && vendor != "apple" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,liblutra.so.0");
    }
}
