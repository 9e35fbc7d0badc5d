-- Values that cannot be stored in a shared table are refused with a clear error that
-- names the value and where it was going; the table is left unchanged.
local s = lutra.shared({ keep = 1 })

local function refused(pattern, f)
  local ok, err = pcall(f)
  assert(not ok, "expected a refusal")
  assert(type(err) == "string" and err:find(pattern, 1, true), ("%q lacks %q"):format(tostring(err), pattern))
  return err
end

local co = coroutine.create(function() end)
local err = refused("cannot store a coroutine in a shared table (key \"co\")", function() s.co = co end)
assert(err:find("^shared_refused.lua:%d+:"), "the error names the caller's line: " .. err)
assert(s.co == nil)

local captured = 1
refused("captures the local 'captured'", function() s.f = function() return captured end end)
refused("C function", function() s.f = string.format end)
refused("cannot store a coroutine in a shared table (key \"outer\"[\"inner\"][2])", function()
  s.outer = { inner = { 1, co } }
end)
assert(s.outer == nil, "nothing of a refused plain table is stored")
refused("cannot store", function() s.file = io.stdout end)
refused("cannot store a coroutine", function() lutra.shared({ co }) end)

-- Isolated functions are stored (as bytecode) and run in any process.
s.double = function(x) return 2 * x end
assert(s.double(21) == 42)
assert(lutra.spawn(function(s) return s.double(5) end, s):join() == 10)
assert(s.keep == 1)
