-- A table given away with lutra.move cannot be stored in a shared table, and the
-- error says it was moved (not that it has a metatable).
local ch = lutra.channel(1)
local t = { 1, 2 }
ch:send(lutra.move(t))
assert(lutra.is_moved(t))
local ok, err = pcall(lutra.shared, t)
assert(not ok and err:find("moved to another process", 1, true), err)
assert(not err:find("metatable", 1, true), err)
local s = lutra.shared({})
ok, err = pcall(function() s.x = t end)
assert(not ok and err:find("moved to another process", 1, true), err)
assert(ch:receive()[2] == 2)
print("ok")
