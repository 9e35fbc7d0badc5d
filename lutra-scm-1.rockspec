-- LuaRocks package of Lutra's loadable module for Lua 5.4: `require "lutra"` and
-- `require "luaproc"` over one runtime (see docs/lua-api.md). From a checkout:
--
--   luarocks --lua-version 5.4 make            (or: make --tree <dir>)
--
-- Builds crates/lutra-lua-module with cargo (the Rust toolchain pinned by
-- rust-toolchain.toml; nothing is downloaded by LuaRocks; cargo fetches crates only if
-- they are not in its cache). LUTRA_PROFILE=debug builds faster, without optimisation.
rockspec_format = "3.0"
package = "lutra"
version = "scm-1"
source = {
  url = "git+file://.", -- `luarocks make` builds the checkout it runs in
}
description = {
  summary = "Lua processes on every core, channels and shared transactional tables",
  detailed = [[
Lutra runs isolated Lua processes on one worker per core, lets them talk over
channels and mailboxes and share tables through software transactional memory, and
offers luaproc's API over the same runtime.]],
  license = "MIT OR Apache-2.0",
}
dependencies = {
  "lua >= 5.4, < 5.5",
}
build = {
  type = "command",
  build_command = "sh scripts/luarocks-build.sh",
  install = {
    -- lutra.so holds both luaopen_lutra and luaopen_luaproc; luaproc.lua loads the
    -- latter from the same file, so both modules share one runtime.
    lib = { lutra = "target/luarocks/lutra.so" },
    lua = { luaproc = "rock/luaproc.lua" },
  },
}
