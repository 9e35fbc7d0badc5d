-- `require "luaproc"` for the LuaRocks install of Lutra: luaproc's API comes from
-- luaopen_luaproc of the same lutra.so that `require "lutra"` loads (one library,
-- so one runtime for both modules).
local path = assert(package.searchpath("lutra", package.cpath))
return assert(package.loadlib(path, "luaopen_luaproc"))(...)
