#!/usr/bin/env bash
# What `make test` needs besides the Rust toolchain, checked before any test runs:
# a C compiler and make (tests/c), pkg-config, the stock lua5.4 interpreter (the
# loadable module's tests), luarocks and Lua 5.4's headers (the rockspec's test:
# `luarocks make` refuses to build without lua.h, though the module needs none). Missing Debian/Ubuntu
# packages are installed with apt-get when running as root (as CI does, .ci/run);
# otherwise the script names them and fails at once, before minutes of tests.
set -euo pipefail

missing=()
need() { command -v "$1" >/dev/null 2>&1 || missing+=("${@:2}"); }
need cc gcc libc6-dev
need make make
need pkg-config pkg-config
need lua5.4 lua5.4
need luarocks luarocks
# callgrind: tests/c checks that the C fast path never calls __tls_get_addr.
need valgrind valgrind
# A TrueType font for the text of lutra-bench's charts (the suite's smoke test).
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || missing+=(fonts-dejavu-core)
# GCC's own STM (libitm): the C benchmark's reference build (`gcc -fgnu-tm`).
[ -n "$(find /usr/lib -name 'libitm.so*' 2>/dev/null | head -n 1)" ] || missing+=(libitm1)
[ -f /usr/include/lua5.4/lua.h ] || missing+=(liblua5.4-dev)
# C modules from Debian's packages, loaded by Lua scripts under `lutra` and under the
# module (tests/lua/c_modules*.lua, examples/weblog): lpeg, cjson, lfs, socket.
[ -n "$(find /usr/lib -path '*lua/5.4/lpeg.so' 2>/dev/null | head -n 1)" ] || missing+=(lua-lpeg)
[ -n "$(find /usr/lib -path '*lua/5.4/cjson.so' 2>/dev/null | head -n 1)" ] || missing+=(lua-cjson)
[ -n "$(find /usr/lib -path '*lua/5.4/lfs.so' 2>/dev/null | head -n 1)" ] || missing+=(lua-filesystem)
[ -n "$(find /usr/lib -path '*lua/5.4/socket/core.so' 2>/dev/null | head -n 1)" ] || missing+=(lua-socket)

if ! command -v cargo >/dev/null 2>&1; then
  echo "install-deps: cargo not found: Lutra needs Rust 1.95 (https://rustup.rs; rust-toolchain.toml pins it)" >&2
  exit 1
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: missing: ${missing[*]}" >&2
  echo "install-deps: install them (Debian/Ubuntu: sudo apt-get install ${missing[*]}), then run make test again" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
