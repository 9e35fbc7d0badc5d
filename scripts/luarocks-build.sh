#!/bin/sh
# The build step of lutra-scm-1.rockspec: builds the loadable module
# (crates/lutra-lua-module, its own workspace) with cargo and leaves it at
# target/luarocks/lutra.so, where the rockspec's install table takes it from.
# Environment: CARGO (default cargo), CARGO_TARGET_DIR (default target/),
# LUTRA_PROFILE (release or debug, default release).
set -eu
cd "$(dirname "$0")/.."
root=$PWD
cargo=${CARGO:-cargo}
profile=${LUTRA_PROFILE:-release}
target=${CARGO_TARGET_DIR:-$root/target}
case "$profile" in
  release) flag=--release ;;
  debug) flag= ;;
  *) echo "luarocks-build: LUTRA_PROFILE must be release or debug, not '$profile'" >&2; exit 1 ;;
esac
if ! command -v "$cargo" >/dev/null 2>&1; then
  echo "luarocks-build: cargo not found: Lutra needs the Rust toolchain (https://rustup.rs)" >&2
  exit 1
fi
# LuaRocks exports its own C settings (CC; CFLAGS in some versions) for C modules.
# The module is a cargo build whose C parts take .cargo/config.toml's CFLAGS: with
# LuaRocks' values cargo would build it a second time, differently from
# scripts/test-module.sh's build of the same sources.
unset CC CFLAGS
(cd crates/lutra-lua-module && CARGO_TARGET_DIR=$target "$cargo" build --locked $flag)
mkdir -p "$root/target/luarocks"
cp -f "$target/$profile/liblutra_lua_module.so" "$root/target/luarocks/lutra.so"
echo "luarocks-build: target/luarocks/lutra.so ($profile)"
