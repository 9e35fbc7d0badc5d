#!/bin/sh
# Builds Lutra's C library in release and installs it under PREFIX:
#   PREFIX/include/lutra/{stm,wrappers,mod_mem,mod_stats,sched,cxlock}.h
#   PREFIX/lib/liblutra.so.VERSION, liblutra.so.0 -> it, liblutra.so -> liblutra.so.0
#   PREFIX/lib/liblutra.a
#   PREFIX/lib/pkgconfig/lutra.pc
# Then: PKG_CONFIG_PATH=PREFIX/lib/pkgconfig cc prog.c $(pkg-config --cflags --libs lutra)
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
