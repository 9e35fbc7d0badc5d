-- A Lua error inside lutra.atomic aborts the transaction (none of its writes is
-- seen, not even by the same process) and propagates with its message and value.
local s = lutra.shared({ x = 1, y = 1 })
local ok, err = pcall(lutra.atomic, function()
  s.x = 2
  s.new = "never"
  s[1] = "never"
  error("failed on purpose")
end)
assert(not ok and err:find("atomic_errors.lua:%d+: failed on purpose"), err)
assert(s.x == 1 and s.new == nil and #s == 0, "no partial writes")

-- Error values that are not strings come back as they are.
local value = { code = 7 }
ok, err = pcall(lutra.atomic, function() s.y = 5; error(value) end)
assert(not ok and err == value and s.y == 1)

-- A failing process leaves no partial writes either.
local p = lutra.spawn(function(s)
  lutra.atomic(function() s.x = 99; error("in a process") end)
end, s)
ok, err = pcall(p.join, p)
assert(not ok and err:find("in a process"), err)
assert(s.x == 1)

-- Bad arguments.
ok, err = pcall(lutra.atomic, 42)
assert(not ok and err:find("bad argument #1 to 'atomic'"), err)
