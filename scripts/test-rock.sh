#!/usr/bin/env bash
# The LuaRocks package works: `luarocks make` of lutra-scm-1.rockspec into a fresh
# tree, then a stock lua5.4 that only knows that tree requires "lutra" and "luaproc"
# and runs processes over one runtime. Builds the release profile, as a user's
# `luarocks make` does (the module scripts/test-module.sh built already, so CI spends
# seconds here); LUTRA_PROFILE=debug checks the unoptimised build. Needs luarocks and
# lua5.4 (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
LUA=${LUA:-lua5.4}
for tool in luarocks "$LUA"; do
  command -v "$tool" >/dev/null 2>&1 ||
    { echo "test-rock: $tool not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
LUTRA_PROFILE=${LUTRA_PROFILE:-release} luarocks --lua-version 5.4 make --tree "$tree" lutra-scm-1.rockspec
lib=$(find "$tree/lib/lua/5.4" -name lutra.so)
[ -n "$lib" ] || { echo "test-rock: lutra.so was not installed in $tree" >&2; exit 1; }
# Only the tree's paths: the module must come from the rock.
LUA_CPATH="$tree/lib/lua/5.4/?.so" LUA_PATH="$tree/share/lua/5.4/?.lua" "$LUA" -e '
  local lutra = require "lutra"
  local p = lutra.spawn(function(n) return n * 2 end, 21)
  assert(p:join() == 42)
  local luaproc = require "luaproc"
  assert(luaproc.newchannel("rock"))
  assert(luaproc.newproc([[luaproc.send("rock", "from a luaproc process")]]))
  assert(luaproc.receive("rock") == "from a luaproc process")
  -- One runtime: a lutra process reaches a channel made through luaproc.
  lutra.spawn(function() require("luaproc").send("rock", "from a lutra process") end)
  assert(luaproc.receive("rock") == "from a lutra process")
  print("test-rock: lutra and luaproc load from the rock")
'
