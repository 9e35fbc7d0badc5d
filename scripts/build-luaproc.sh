#!/bin/sh
# Builds the original luaproc (https://github.com/askyrme/luaproc) for Lua 5.4, for
# luabench's runs of experiment 2 beside it, from the sources in LUAPROC_SRC. Its
# sources target Lua 5.2 and 5.3, where `lua_resume` takes three arguments; a header
# given to the compiler with `-include` maps that call onto Lua 5.4's four-argument
# `lua_resume` (the results' count it adds is not used by luaproc). Nothing is
# written into LUAPROC_SRC: the module is built into $CARGO_TARGET_DIR/luaproc
# (default target/), as luaproc.so.
#
#   LUAPROC_SRC=/path/to/luaproc scripts/build-luaproc.sh
#
# Prints the directory that holds luaproc.so (for LUA_CPATH). Exits 2 without
# LUAPROC_SRC, 1 if the build fails.
set -eu
if [ -z "${LUAPROC_SRC:-}" ]; then
  echo "$0: LUAPROC_SRC is not set (the directory of luaproc's sources)" >&2
  exit 2
fi
if [ ! -f "$LUAPROC_SRC/src/luaproc.c" ] || [ ! -f "$LUAPROC_SRC/src/lpsched.c" ]; then
  echo "$0: $LUAPROC_SRC holds no luaproc sources (src/luaproc.c, src/lpsched.c)" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
out="$target/luaproc"
src=$(cd "$LUAPROC_SRC" && pwd)
mkdir -p "$out"
cflags=$(pkg-config --cflags lua5.4 2>/dev/null || echo "-I/usr/include/lua5.4")
cat >"$out/lua54_resume.h" <<'HEADER'
/* Lua 5.4's lua_resume under the three-argument call of Lua 5.2 and 5.3. */
#include <lua.h>
static inline int luaproc_resume_5_4(lua_State *thread, lua_State *from, int nargs) {
  int results;
  return lua_resume(thread, from, nargs, &results);
}
#define lua_resume(thread, from, nargs) luaproc_resume_5_4(thread, from, nargs)
HEADER
# shellcheck disable=SC2086 # $cflags is a list of options
if ! ${CC:-cc} -O2 -shared -fPIC $cflags -include "$out/lua54_resume.h" \
  "$src/src/lpsched.c" "$src/src/luaproc.c" -o "$out/luaproc.so" -lpthread \
  >"$out/build.log" 2>&1; then
  echo "$0: building luaproc failed; see $out/build.log" >&2
  exit 1
fi
echo "$out"
