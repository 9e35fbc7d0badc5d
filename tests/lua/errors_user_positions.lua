-- Errors of lutra's Lua functions name the user's line (not a line of the runtime's
-- own chunks), also when the call is a tail call or made through pcall; a yield
-- inside lutra.atomic and a process joining itself are clear errors the caller can
-- catch.
local here = "errors_user_positions.lua:"

-- `f` raises `text` at the line of the `raises` call (where `f` is written).
local function raises(text, f, ...)
  local expected_line = debug.getinfo(2, "l").currentline
  local ok, err = pcall(f, ...)
  assert(not ok, "no error")
  assert(type(err) == "string", "not a string: " .. tostring(err))
  assert(not err:find("lutra%.") or err:find("lutra%.move") or err:find("lutra%.atomic"),
    "points into the runtime: " .. err)
  assert(not err:find("runtime error"), "an internal prefix: " .. err)
  assert(err:find(here .. expected_line .. ":", 1, true), "not at line " .. expected_line .. ": " .. err)
  assert(err:find(text, 1, true), "lacks " .. text .. ": " .. err)
end

local co = coroutine.create(print)
raises("bad argument #1 to 'freeze'", function() local v = lutra.freeze(co) return v end)
-- A tail call leaves no frame of its caller: the position is the nearest user line.
local ok, err = pcall(function() return lutra.freeze(co) end)
assert(not ok and err:find("^" .. here .. "%d+: bad argument #1 to 'freeze'"), err)
raises("bad argument #1 to 'move' (table expected, got number)", function() local v = lutra.move(1) return v end)
raises("bad argument #1 to 'shared' (table or nil expected, got thread)", function() local v = lutra.shared(co) return v end)
raises("cannot store a coroutine", function() local v = lutra.shared({ co = co }) return v end)
local s = lutra.shared({})
raises("cannot store a coroutine", function() s.x = co end)
raises("bad argument #1 to 'spawn' (function or source string expected, got integer)", function() local v = lutra.spawn(42) return v end)
-- Misuse of other calls, tail-called: still a position in this file.
for _, f in ipairs({
  function() return lutra.channel(-1) end,
  function() return lutra.atomic(42) end,
  function() return lutra.or_else(1, 2) end,
  function() return lutra.retry() end,
  function() return lutra.sleep("x") end,
  function() return lutra.select() end,
  function() return lutra.channel():try_receive("x") end,
}) do
  local ok, err = pcall(f)
  assert(not ok and err:find("^" .. here .. "%d+: "), err)
end

-- Called by pcall itself: the user's line is the pcall's.
local line = debug.getinfo(1, "l").currentline; ok, err = pcall(lutra.spawn, 42)
assert(not ok and err:find(here .. line .. ": bad argument #1 to 'spawn'", 1, true), err)

-- coroutine.yield inside lutra.atomic: said as such (a coroutine of its own may yield).
raises("coroutine.yield inside lutra.atomic", function() lutra.atomic(function() coroutine.yield() end) end)
assert(lutra.atomic(function()
  local inner = coroutine.wrap(function() coroutine.yield(7) end)
  return inner()
end) == 7)

-- Joining oneself: an error the caller catches, in the main process and in another.
raises("a process cannot join itself", function() local v = lutra.self():join() return v end)
local p = lutra.spawn(function()
  local ok, err = pcall(function() return lutra.self():join() end)
  return ok, err
end)
ok, err = p:join()
assert(ok == false and err:find("a process cannot join itself"), tostring(err))
print("ok")
