#!/usr/bin/env bash
# Builds the loadable module (crates/lutra-lua-module, its own workspace: it links
# against the host's Lua, which cannot be built together with the vendored Lua of the
# other crates) and runs every tests/module/*.lua with a stock lua5.4 that finds it:
# lutra.so (luaopen_lutra) and luaproc.so, a symbolic link to the same file
# (luaopen_luaproc; one file, so one runtime).
#
# A script passes when lua5.4 exits 0 (scripts use `assert`; `-- expect-exit: N` at
# its top expects N instead) and its output (standard output and error together)
# contains the text of each `-- expect-stdout: text` line at its top, the text of each
# `-- expect-once: text` line exactly once, and the texts of the `-- expect-sequence:
# text` lines on lines in that order. Needs the Debian
# package lua5.4 (the interpreter; the module needs no Lua headers or library).
# Environment: CARGO (default cargo), CARGO_TARGET_DIR (default target/), PROFILE
# (release, the default: the module users install, as the rockspec builds it; or
# debug), LUA (default lua5.4), BUILD_ONLY (1: build and place the module only).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

CARGO=${CARGO:-cargo}
LUA=${LUA:-lua5.4}
PROFILE=${PROFILE:-release}
target=${CARGO_TARGET_DIR:-$root/target}

if ! command -v "$LUA" >/dev/null 2>&1; then
  echo "test-module: $LUA not found (Debian/Ubuntu: apt-get install lua5.4)" >&2
  exit 1
fi

flags=()
[ "$PROFILE" = release ] && flags+=(--release)
(cd crates/lutra-lua-module && CARGO_TARGET_DIR=$target "$CARGO" build "${flags[@]}")

lib="$target/$PROFILE/liblutra_lua_module.so"
[ -f "$lib" ] || { echo "test-module: $lib was not built" >&2; exit 1; }
dir="$target/lua-module"
mkdir -p "$dir"
cp -f "$lib" "$dir/lutra.so"
ln -sf lutra.so "$dir/luaproc.so"
echo "module: $dir/lutra.so (and luaproc.so)"
# BUILD_ONLY=1: build and place the module, run nothing (make bench-lua).
[ "${BUILD_ONLY:-0}" = 1 ] && exit 0

export LUA_CPATH="$dir/?.so;;"
failed=0
total=0
for script in tests/module/*.lua; do
  total=$((total + 1))
  problem=""
  expected_status=$(sed -n '/^--/!q; s/^-- *expect-exit: *//p' "$script")
  expected_status=${expected_status:-0}
  status=0
  out=$(cd tests/module && timeout 120 "$LUA" "$(basename "$script")" 2>&1) || status=$?
  [ "$status" = "$expected_status" ] || problem="exit status $status, expected $expected_status"
  while IFS= read -r expected; do
    grep -qF -- "$expected" <<<"$out" || problem="${problem:+$problem; }output lacks '$expected'"
  done < <(sed -n '/^--/!q; s/^-- *expect-stdout: *//p' "$script")
  while IFS= read -r expected; do
    count=$(grep -cF -- "$expected" <<<"$out" || true)
    [ "$count" = 1 ] || problem="${problem:+$problem; }'$expected' appears $count times, not once"
  done < <(sed -n '/^--/!q; s/^-- *expect-once: *//p' "$script")
  previous=0
  while IFS= read -r expected; do
    at=$(grep -nF -- "$expected" <<<"$out" | head -1 | cut -d: -f1)
    if [ -z "$at" ] || [ "$at" -le "$previous" ]; then
      problem="${problem:+$problem; }'$expected' is not where the sequence expects it"
    fi
    previous=${at:-$previous}
  done < <(sed -n '/^--/!q; s/^-- *expect-sequence: *//p' "$script")
  if [ -z "$problem" ]; then
    echo "ok    $script"
  else
    echo "FAIL  $script: $problem"
    echo "FAIL  $script"
    echo "$out" | sed 's/^/      /'
    failed=$((failed + 1))
  fi
done
echo "$total module scripts, $failed failed"
[ "$failed" -eq 0 ]
