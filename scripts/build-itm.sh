#!/bin/sh
# Builds Lutra's libitm.so.1: the whole C ABI, GCC's TM ABI included, linked from
# liblutra.a with libitm's symbol version (LIBITM_1.0), so that a program built
# with `gcc -fgnu-tm` runs on Lutra when this library is found first:
#
#   LD_LIBRARY_PATH=target/release/itm ./program
#
# Usage: scripts/build-itm.sh [debug|release]   (default: release)
# Prints the directory holding libitm.so.1 (and the libitm.so link for linking).
# With LUTRA_ITM_LINK_ONLY=1 it links the liblutra.a already built, without cargo.
set -eu
profile=${1:-release}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
case "$profile" in
  release) flags=--release ;;
  debug) flags= ;;
  *) echo "usage: $0 [debug|release]" >&2; exit 64 ;;
esac
if [ "${LUTRA_ITM_LINK_ONLY:-0}" != 1 ]; then
  cargo build --quiet $flags -p lutra-capi
fi
target=${CARGO_TARGET_DIR:-$root/target}
out="$target/$profile/itm"
mkdir -p "$out"
${CC:-cc} -shared -o "$out/libitm.so.1.tmp" \
  -Wl,-soname,libitm.so.1 \
  -Wl,--version-script="$root/crates/lutra-capi/itm.map" \
  -Wl,--whole-archive "$target/$profile/liblutra.a" -Wl,--no-whole-archive \
  -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
mv "$out/libitm.so.1.tmp" "$out/libitm.so.1"
ln -sf libitm.so.1 "$out/libitm.so"
echo "$out"
