-- Misused calls raise `bad argument #n to 'name' (x expected, got y)` at the
-- caller's line: a timeout that is NaN or not a number,
-- `or_else` without two functions.
local function raises(pattern, f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "no error for " .. pattern)
  assert(tostring(err):find(pattern, 1, true), tostring(err) .. "\n  does not contain: " .. pattern)
  return err
end

local here = "errors_bad_arguments.lua:"
local nan = 0 / 0
local ch = lutra.channel(1)

raises(here .. "15: bad argument #1 to 'sleep' (number expected, got string)", function() lutra.sleep("x") end)
raises(here .. "16: bad argument #1 to 'sleep' (number expected, got NaN)", function() lutra.sleep(nan) end)
raises(here .. "17: bad argument #1 to 'receive' (number expected, got NaN)", function() lutra.receive(nan) end)
raises(here .. "18: bad argument #1 to 'receive' (number expected, got table)", function() lutra.receive({}) end)
raises(here .. "19: bad argument #1 to 'try_receive' (number expected, got NaN)", function() ch:try_receive(nan) end)
raises(here .. "20: bad argument #2 to 'select' (number expected, got NaN)", function() lutra.select(ch, nan) end)

raises(here .. "22: bad argument #1 to 'or_else' (function expected, got nil)", function() lutra.or_else() end)
raises(here .. "23: bad argument #1 to 'or_else' (function expected, got number)", function() lutra.or_else(1, 2) end)
raises(here .. "24: bad argument #2 to 'or_else' (function expected, got nil)", function() lutra.or_else(function() end) end)
raises(here .. "26: bad argument #2 to 'or_else' (function expected, got string)", function()
  lutra.atomic(function() lutra.or_else(function() end, "g") end)
end)

-- A negative timeout answers at once, as 0 does.
local t0 = lutra.now()
assert(ch:try_receive(-1) == false)
assert(lutra.receive(-5) == nil)
assert(lutra.select(ch, -1) == nil)
lutra.sleep(-1)
assert(lutra.now() - t0 < 60)

-- The runtime went on: the same calls work with good arguments.
ch:send("ok")
assert(select(2, ch:try_receive(0)) == "ok")
assert(lutra.or_else(function() lutra.retry() end, function() return 7 end) == 7)

-- os.exit takes an integer or a boolean (item 16); a refused one exits nothing.
raises(here .. "43: bad argument #1 to 'exit' (integer or boolean expected, got string)", function() os.exit("x") end)
raises(here .. "44: bad argument #1 to 'exit' (integer or boolean expected, got number)", function() os.exit(1.5) end)
