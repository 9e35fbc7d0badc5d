-- Channel calls on something that is not a channel, and select without channels,
-- raise bad-argument errors at the caller's line (not a conversion error from inside
-- the runtime).
local ch = lutra.channel(1)
local here = debug.getinfo(1, "S").short_src

local function refused(expected, f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "accepted")
  assert(err:find(expected, 1, true), err)
  assert(err:find(here, 1, true), "not at the caller's line: " .. err)
  assert(not err:find("converting", 1, true), err)
end

refused("bad argument #1 to 'send' (channel expected, got nil)", function() ch.send(nil, 1) end)
refused("bad argument #1 to 'receive' (channel expected, got number)", function() ch.receive(5) end)
refused("bad argument #1 to 'try_receive' (channel expected, got string)", function() ch.try_receive("x") end)
refused("bad argument #1 to 'close' (channel expected, got table)", function() ch.close({}) end)
refused("bad argument #1 to 'values' (channel expected, got nil)", function() ch.values(nil) end)
refused("bad argument #1 to 'select' (channel expected, got no value)", function() lutra.select() end)
-- the channel itself still works
ch:send(7)
assert(ch:receive() == 7)
print("ok")
