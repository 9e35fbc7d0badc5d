-- Nested lutra.atomic calls flatten into the outermost transaction: the inner
-- results come back, and the whole commits (or not) as one. An error inside a nested
-- call undoes the nested call's writes; caught, the outer transaction goes on.
local s = lutra.shared({ a = 0, b = 0 })
local function add(key, n)
  return lutra.atomic(function()
    s[key] = s[key] + n
    return s[key]
  end)
end

local r1, r2 = lutra.atomic(function()
  return add("a", 1), add("b", 2)
end)
assert(r1 == 1 and r2 == 2 and s.a == 1 and s.b == 2)

-- The outer transaction fails after the inner ones: nothing is committed.
local ok = pcall(lutra.atomic, function()
  add("a", 10)
  add("b", 10)
  error("outer fails")
end)
assert(not ok and s.a == 1 and s.b == 2, "no partial writes")

-- A caught error in a nested call undoes only the nested call's writes.
lutra.atomic(function()
  s.a = 100
  local ok, err = pcall(lutra.atomic, function()
    s.b = 200
    error("inner fails")
  end)
  assert(not ok and err:find("inner fails"))
  assert(s.b == 2, "the nested writes were undone")
end)
assert(s.a == 100 and s.b == 2)
assert(lutra.in_atomic() == false)
assert(lutra.atomic(lutra.in_atomic) == true)
