#!/bin/sh
# Builds tinySTM (https://github.com/patrickmarlier/tinystm) for the C benchmark's
# tinySTM column (bench/c/README.md), from the sources in TINYSTM_SRC, with its
# default configuration (its Makefile: write-back, encounter-time locking, suicide
# contention manager, -O2 -march=native). Nothing is written into TINYSTM_SRC: the
# sources are copied to $CARGO_TARGET_DIR/tinystm/src (default target/) and built
# there; lib/libstm.a and include/stm.h are found under it.
#
#   TINYSTM_SRC=/path/to/tinystm scripts/build-tinystm.sh
#
# With TINYSTM_STATS=1 it builds into target/tinystm-stats instead, with tinySTM's
# statistics (TM_STATISTICS, TM_STATISTICS2: aborts by cause, through stm_get_stats).
# Prints the build's root (holding include/ and lib/libstm.a). Exits 2 without
# TINYSTM_SRC, 1 if the build fails.
set -eu
if [ -z "${TINYSTM_SRC:-}" ]; then
  echo "$0: TINYSTM_SRC is not set (the directory of tinySTM's sources)" >&2
  exit 2
fi
if [ ! -f "$TINYSTM_SRC/Makefile" ] || [ ! -f "$TINYSTM_SRC/include/stm.h" ]; then
  echo "$0: $TINYSTM_SRC holds no tinySTM sources (Makefile, include/stm.h)" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
case "${TINYSTM_STATS:-0}" in
  1) out="$target/tinystm-stats" stats=1 ;;
  *) out="$target/tinystm" stats=0 ;;
esac
src=$(cd "$TINYSTM_SRC" && pwd)
mkdir -p "$out/src"
# Copy what the build reads, without .git or objects built in the source tree;
# tar keeps the sources' times, so make rebuilds only what changed since the last
# build here.
entries=
for entry in Makefile Makefile.common Makefile.gcc Makefile.clang Makefile.icc \
  Makefile.suncc include src; do
  if [ -e "$src/$entry" ]; then
    entries="$entries $entry"
  fi
done
# shellcheck disable=SC2086 # $entries is a list of names
tar -C "$src" --exclude='*.o' --exclude='*.a' -cf - $entries | tar -C "$out/src" -xpf -
if [ "$stats" = 1 ]; then
  # The Makefile's own switches, turned on in the copy (DEFINES given to make
  # would replace its whole list).
  sed -e 's/^DEFINES += -UTM_STATISTICS$/DEFINES += -DTM_STATISTICS/' \
    -e 's/^DEFINES += -UTM_STATISTICS2$/DEFINES += -DTM_STATISTICS2/' \
    "$out/src/Makefile" >"$out/src/Makefile.stats"
  touch -r "$src/Makefile" "$out/src/Makefile.stats"
  mv "$out/src/Makefile.stats" "$out/src/Makefile"
fi
mkdir -p "$out/src/lib"
if ! make --no-print-directory -C "$out/src" CC="${CC:-cc}" lib/libstm.a >"$out/build.log" 2>&1; then
  echo "$0: building tinySTM failed; see $out/build.log" >&2
  exit 1
fi
echo "$out/src"
