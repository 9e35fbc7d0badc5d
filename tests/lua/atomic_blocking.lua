-- Blocking on a channel (or a mailbox, a join, a sleep) inside lutra.atomic is an
-- error with a clear message; the transaction is rolled back. Sending on a buffered
-- channel does not block: it makes the transaction irrevocable (done once).
local s = lutra.shared({ x = 0 })
local ch = lutra.channel()
local ok, err = pcall(lutra.atomic, function()
  s.x = 1
  return ch:receive()
end)
assert(not ok and err:find("cannot block on receive on channel#%d+ inside lutra.atomic"), err)
assert(err:find("lutra.retry"), err)
assert(s.x == 0, "rolled back")

ok, err = pcall(lutra.atomic, function() lutra.sleep(0.01) end)
assert(not ok and err:find("inside lutra.atomic"), err)

ok, err = pcall(lutra.atomic, function() lutra.receive() end)
assert(not ok and err:find("inside lutra.atomic"), err)

local buffered = lutra.channel(4)
lutra.atomic(function()
  s.x = s.x + 1
  buffered:send("sent once", s.x)
end)
local ok2, what, n = buffered:try_receive()
assert(ok2 and what == "sent once" and n == 1)
assert(select(1, buffered:try_receive()) == false, "exactly one message")
