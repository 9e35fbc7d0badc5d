//! Builds the C shim (`c/shim.c`) into the library, gives the shared library its
//! soname (`liblutra.so.0`), so that programs link against the ABI's major version,
//! and places the name the loader looks for beside the library.
//!
//! # The soname link
//! A program linked with `-L target/release -llutra` records `liblutra.so.0` (the
//! soname) and the loader looks for that name, which cargo does not create: this
//! script makes `liblutra.so.0 -> liblutra.so` in the output directory of the
//! profile (`target/<profile>`, or `target/<triple>/<profile>`), found as the third
//! ancestor of `OUT_DIR` (`<profile>/build/<package>-<hash>/out`). The link is
//! relative, so it resolves once cargo has linked `liblutra.so` (after this script
//! runs) and stays valid if the target directory moves. If the layout is not the
//! expected one, no link is made and a warning says so.
//!
//! # Calls inside the shared library
//! `-Bsymbolic-functions`: a call from the library to one of its own exported
//! functions (the shim calling into Rust) is bound at link time, without a PLT
//! hop; a program cannot interpose them.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=c/shim.c");
    println!("cargo:rerun-if-changed=c/task_exit.c");
    println!("cargo:rerun-if-changed=c/capi.h");
    println!("cargo:rerun-if-changed=../../include/lutra/stm.h");
    cc::Build::new()
        .file("c/shim.c")
        .file("c/task_exit.c")
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
        // Calls inside the shared library bind to its own functions at link time:
        // no PLT hop (the shim's calls into Rust), and no interposition of them.
        println!("cargo:rustc-cdylib-link-arg=-Wl,-Bsymbolic-functions");
        link_soname();
    }
}

/// The profile's output directory, from `OUT_DIR`.
fn profile_dir() -> Option<PathBuf> {
    let out = PathBuf::from(std::env::var_os("OUT_DIR")?);
    let dir = out.ancestors().nth(3)?;
    let build = out.ancestors().nth(2)?;
    (build.file_name()? == "build").then(|| dir.to_path_buf())
}

/// Makes `liblutra.so.0 -> liblutra.so` in the profile's output directory.
fn link_soname() {
    let Some(dir) = profile_dir() else {
        println!("cargo:warning=unexpected OUT_DIR layout: liblutra.so.0 not linked");
        return;
    };
    let link = dir.join("liblutra.so.0");
    let target = Path::new("liblutra.so");
    if std::fs::read_link(&link).is_ok_and(|current| current == target) {
        return;
    }
    let _ = std::fs::remove_file(&link);
    #[cfg(unix)]
    if let Err(error) = std::os::unix::fs::symlink(target, &link) {
        println!(
            "cargo:warning=cannot link {} -> liblutra.so: {error}",
            link.display()
        );
    }
}
