-- Under the module: `s.k = lutra.move(t)` stores t's contents and moves t; a
-- process reads them; a store inside an atomic that fails keeps t.
-- expect-stdout: ok
local lutra = require "lutra"
local s = lutra.shared({})
local t = { 1, 2, nested = { "n" } }
s.m = lutra.move(t)
assert(lutra.is_moved(t) and s.m[2] == 2 and s.m.nested[1] == "n")
local p = lutra.spawn(function(s) return s.m.nested[1] end, s)
assert(p:join() == "n")
local u = { "u" }
local ok = pcall(lutra.atomic, function() s.u = lutra.move(u); error("undo") end)
assert(not ok and not lutra.is_moved(u) and u[1] == "u" and s.u == nil)
print("ok")
