-- `s.k = lutra.move(t)` and `lutra.shared{k = lutra.move(t)}` move t's contents into
-- the shared table (copied as any plain table is, nested tables included) and leave
-- t moved; every process reads what was stored. A store that is refused, fails or
-- is undone leaves t as it was.
local s = lutra.shared({})
local t = { 1, 2, inner = { x = 3, deeper = { "y" } } }
s.m = lutra.move(t)
assert(lutra.is_moved(t), "the stored table is moved")
assert(s.m[2] == 2 and s.m.inner.x == 3 and s.m.inner.deeper[1] == "y")

local u = { a = "b" }
local s2 = lutra.shared({ m = lutra.move(u), n = 1 })
assert(lutra.is_moved(u) and s2.m.a == "b" and s2.n == 1)

-- Markers nested anywhere in what is stored; a table moved inside a moved one.
local x, y = { "x" }, { "y" }
local holder = { y = lutra.move(y) }
s.nested = { outer = { inner = lutra.move(x) }, holder = lutra.move(holder) }
assert(lutra.is_moved(x) and lutra.is_moved(y) and lutra.is_moved(holder))
assert(s.nested.outer.inner[1] == "x" and s.nested.holder.y[1] == "y")

-- Another process reads both.
local p = lutra.spawn(function(s, s2)
  return s.m.inner.deeper[1], s2.m.a
end, s, s2)
local deeper, a = p:join()
assert(deeper == "y" and a == "b", "another process reads the moved contents")

-- Refused before anything moves: a metatable, a function that cannot cross.
local with_meta = setmetatable({ 1 }, {})
local ok, err = pcall(function() s.bad = lutra.move(with_meta) end)
assert(not ok and err:find("metatable"), err)
assert(not lutra.is_moved(with_meta) and with_meta[1] == 1, "a refused store moved its table")
local local_value = 5
local halfway = { 1, 2, 3, f = function() return local_value end, 4 }
ok, err = pcall(lutra.shared, { m = lutra.move(halfway) })
assert(not ok and err:find("shared_move_into.lua:%d+:"), err)
assert(not lutra.is_moved(halfway) and halfway[3] == 3 and halfway.f() == 5,
  "a store that failed halfway moved its table")
assert(s.bad == nil)

-- A moved table is no key, and a lookup moves nothing.
local k = { 1 }
ok, err = pcall(function() s[lutra.move(k)] = 1 end)
assert(not ok and err:find("key"), err)
assert(s[lutra.move(k)] == nil)
assert(not lutra.is_moved(k) and k[1] == 1)

-- Inside lutra.atomic: moved when the transaction commits; an error undoes the store
-- and keeps t.
local v = { "v" }
ok, err = pcall(lutra.atomic, function()
  s.v = lutra.move(v)
  error("changed my mind")
end)
assert(not ok and err:find("changed my mind"), err)
assert(not lutra.is_moved(v) and v[1] == "v" and s.v == nil, "an undone store moved its table")
lutra.atomic(function()
  s.v = lutra.move(v)
  assert(not lutra.is_moved(v), "moved only when the transaction commits")
end)
assert(lutra.is_moved(v) and s.v[1] == "v")

-- A nested atomic that fails undoes its store (and keeps its table); the outer one
-- commits the rest.
local w, x = { "w" }, { "x" }
lutra.atomic(function()
  s.w = lutra.move(w)
  pcall(lutra.atomic, function()
    s.x = lutra.move(x)
    error("inner fails")
  end)
end)
assert(lutra.is_moved(w) and s.w[1] == "w")
assert(not lutra.is_moved(x) and x[1] == "x" and s.x == nil)

-- A move into a shared table from many processes at once: each table arrives whole.
local n = 20
local procs = {}
for i = 1, n do
  procs[i] = lutra.spawn(function(s, i)
    local mine = { i, i * 2 }
    lutra.atomic(function() s[i] = lutra.move(mine) end)
    return lutra.is_moved(mine)
  end, s, i)
end
for i = 1, n do
  assert(procs[i]:join() == true)
  assert(s[i][1] == i and s[i][2] == i * 2)
end
print("ok")
