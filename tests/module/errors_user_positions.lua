-- Under the module too, errors of lutra's functions name the user's line, a yield
-- inside lutra.atomic says so, and joining oneself is an error the caller catches.
-- expect-stdout: ok
local lutra = require "lutra"
local here = "errors_user_positions.lua:"

local function raises(text, f)
  local line = debug.getinfo(2, "l").currentline
  local ok, err = pcall(f)
  assert(not ok and type(err) == "string", tostring(err))
  assert(not err:find("runtime error"), err)
  assert(err:find(here .. line .. ": " .. text, 1, true), err)
end

local co = coroutine.create(print)
raises("bad argument #1 to 'freeze'", function() local v = lutra.freeze(co) return v end)
raises("bad argument #1 to 'move'", function() local v = lutra.move(1) return v end)
raises("bad argument #1 to 'shared'", function() local v = lutra.shared(co) return v end)
raises("cannot store a coroutine", function() local v = lutra.shared({ co = co }) return v end)
raises("bad argument #1 to 'spawn'", function() local v = lutra.spawn(42) return v end)
raises("bad argument #1 to 'join' (a process cannot join itself", function() local v = lutra.self():join() return v end)

local ok, err = pcall(lutra.atomic, function() coroutine.yield() end)
assert(not ok and err:find("coroutine.yield inside lutra.atomic", 1, true), err)
ok, err = coroutine.wrap(function()
  return pcall(lutra.atomic, function() coroutine.yield() end)
end)()
assert(not ok and err:find("coroutine.yield inside lutra.atomic", 1, true), err)

local p = lutra.spawn(function()
  return pcall(function() local v = lutra.self():join() return v end)
end)
ok, err = p:join()
assert(ok == false and err:find("a process cannot join itself", 1, true), tostring(err))
print("ok")
