#!/bin/sh
# Builds Lutra's C library in release and installs it under PREFIX:
#   PREFIX/include/lutra/{stm,wrappers,mod_mem,mod_stats,sched,cxlock}.h
#   PREFIX/lib/liblutra.so.VERSION, liblutra.so.0 -> it, liblutra.so -> liblutra.so.0
#   PREFIX/lib/liblutra.a
#   PREFIX/lib/pkgconfig/lutra.pc
# Then: cc prog.c $(pkg-config --cflags --libs lutra); `#include <lutra/stm.h>` and,
# as in tinySTM programs, `#include <stm.h>` both work.
# A program finds liblutra.so.0 when PREFIX/lib is a directory the loader searches
# (/usr/local/lib is): the script then runs ldconfig (as root; otherwise it says to).
# For any other prefix it prints the two variables to set: PKG_CONFIG_PATH (unless
# pkg-config searches PREFIX/lib/pkgconfig already) and LD_LIBRARY_PATH (or link
# with -Wl,-rpath,PREFIX/lib).
# Respects CARGO_TARGET_DIR (default: target/ in the repository).
set -eu

if [ $# -ne 1 ]; then
    echo "usage: $0 PREFIX" >&2
    exit 2
fi
mkdir -p "$1"
PREFIX=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)

cargo build --release -p lutra-capi --manifest-path "$ROOT/Cargo.toml"

TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
case $TARGET in
    /*) ;;
    *) TARGET=$PWD/$TARGET ;;
esac
LIBS=$TARGET/release
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -n 1)
MAJOR=${VERSION%%.*}
[ -n "$VERSION" ] || { echo "$0: no version in $ROOT/Cargo.toml" >&2; exit 1; }

install -d "$PREFIX/include/lutra" "$PREFIX/lib/pkgconfig"
install -m 644 "$ROOT"/include/lutra/*.h "$PREFIX/include/lutra/"
install -m 755 "$LIBS/liblutra.so" "$PREFIX/lib/liblutra.so.$VERSION"
ln -sf "liblutra.so.$VERSION" "$PREFIX/lib/liblutra.so.$MAJOR"
ln -sf "liblutra.so.$MAJOR" "$PREFIX/lib/liblutra.so"
install -m 644 "$LIBS/liblutra.a" "$PREFIX/lib/liblutra.a"
sed -e "s|@PREFIX@|$PREFIX|g" -e "s|@VERSION@|$VERSION|g" \
    "$ROOT/crates/lutra-capi/lutra.pc.in" > "$PREFIX/lib/pkgconfig/lutra.pc"
echo "installed Lutra $VERSION in $PREFIX"

# Whether directory $1 is in the colon- or newline-separated list $2 (both sides
# canonical: /lib is /usr/lib on a merged-/usr system).
listed() {
  dir=$(readlink -f "$1")
  for entry in $(printf '%s\n' "$2" | tr ':' '\n'); do
    [ "$(readlink -f "$entry" 2>/dev/null)" = "$dir" ] && return 0
  done
  return 1
}
# The directories the dynamic loader searches: ldconfig's (ld.so.conf and the
# built-in ones) and the usual system ones.
loader_dirs=$( (ldconfig -v -N -X 2>/dev/null || /sbin/ldconfig -v -N -X 2>/dev/null) |
  sed -n 's|^\(/[^:]*\):.*|\1|p'; printf '/lib\n/usr/lib\n')
if listed "$PREFIX/lib" "$loader_dirs"; then
  if [ "$(id -u)" -eq 0 ]; then
    ldconfig || /sbin/ldconfig
    echo "ran ldconfig: programs find liblutra.so.$MAJOR in $PREFIX/lib"
  else
    echo "now run: sudo ldconfig   (so that programs find liblutra.so.$MAJOR)"
  fi
else
  echo "$PREFIX/lib is not searched by the dynamic loader: set, for building and running,"
  pc_path=$(pkg-config --variable pc_path pkg-config 2>/dev/null || true)
  if ! listed "$PREFIX/lib/pkgconfig" "${PKG_CONFIG_PATH:-}:$pc_path"; then
    echo "  export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig"
  fi
  echo "  export LD_LIBRARY_PATH=$PREFIX/lib"
  echo "(or link with -Wl,-rpath,$PREFIX/lib instead of setting LD_LIBRARY_PATH)"
fi
