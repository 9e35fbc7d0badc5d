-- lutra.move: the table is handed over; the sender's table then raises on any use.
local ch = lutra.channel(4)
local MOVED = "this table was moved to another process (lutra.move)"

local function raises(f)
  local ok, err = pcall(f)
  assert(not ok and err:find(MOVED, 1, true), tostring(err))
end

-- the marker does nothing until it is sent
local t = { 1, 2, 3, name = "data", sub = { "kept" } }
local sub = t.sub
local marker = lutra.move(t)
assert(tostring(marker) == "lutra.move marker")
assert(t.name == "data" and not lutra.is_moved(t))

ch:send(marker)
assert(lutra.is_moved(t))
raises(function() return t[1] end)
raises(function() return t.name end)
raises(function() t.x = 1 end)
raises(function() return #t end)
raises(function() for _ in pairs(t) do end end)
raises(function() for _ in ipairs(t) do end end)
raises(function() return t .. "" end)
raises(function() t() end)
assert(next(t) == nil, "the sender's table was emptied")
local ok, err = pcall(setmetatable, t, nil)
assert(not ok and err:find("protected"), err)
-- sub-tables were copied with it; the sender's other references stay usable
assert(sub[1] == "kept")
-- the receiver got the contents
local got = ch:receive()
assert(got[3] == 3 and got.name == "data" and got.sub[1] == "kept" and getmetatable(got) == nil)

-- a moved table cannot be moved or sent again
ok, err = pcall(lutra.move, t)
assert(not ok and err:find("already"), err)
ok, err = pcall(ch.send, ch, t)
assert(not ok and err:find(MOVED, 1, true), err)
ok, err = pcall(ch.send, ch, { inner = t })
assert(not ok and err:find("argument #1.inner", 1, true), err)
-- a marker used twice: the second send is refused
local u = { "u" }
local m = lutra.move(u)
ch:send(m)
ok, err = pcall(ch.send, ch, m)
assert(not ok and err:find("already"), err)
assert(ch:receive()[1] == "u")

-- if export fails, nothing is moved
local keep = { 1, 2 }
ok, err = pcall(ch.send, ch, lutra.move(keep), coroutine.create(function() end))
assert(not ok and err:find("argument #2"), err)
assert(not lutra.is_moved(keep) and keep[2] == 2, "a refused message moves nothing")
ok = ch:try_receive()
assert(not ok)

-- the same table moved and referenced in one message arrives once
local both = { "both" }
ch:send(lutra.move(both), both)
local first, second = ch:receive()
assert(first == second and first[1] == "both")

-- moves through spawn arguments, mailboxes and results
local arg = { n = 5 }
local p = lutra.spawn(function(a) return lutra.receive().n + a.n end, lutra.move(arg))
assert(lutra.is_moved(arg))
local mail = { n = 6 }
p:send(lutra.move(mail))
assert(lutra.is_moved(mail))
assert(p:join() == 11)
local result = lutra.spawn(function() local r = { "r" } return lutra.move(r) end):join()
assert(result[1] == "r")

-- misuse
ok, err = pcall(lutra.move, "string")
assert(not ok and err:find("table expected"), err)
ok, err = pcall(lutra.move, _G)
assert(not ok and err:find("globals"), err)
print("transfer_move ok")
