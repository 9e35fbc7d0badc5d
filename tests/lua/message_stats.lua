-- lutra-args: --stats
-- expect-stderr: processes spawned  4
-- expect-stderr: messages sent      8
-- expect-stderr: messages received  8
-- --stats counts every message once, whichever path carries it: the native calls
-- (scalars), the Lua loops behind them (a table, a timeout, select), channels,
-- mailboxes and luaproc's named channels alike.
local luaproc = require "luaproc"

-- A channel: 4 messages, received natively (a scalar, a table), by select and by
-- try_receive with a timeout.
local ch = lutra.channel()
lutra.spawn(function(ch)
  ch:send(1)
  ch:send({ 2 })
  ch:send(3)
  ch:send(4)
end, ch)
assert(ch:receive() == 1)
assert(ch:receive()[1] == 2)
assert(select(2, lutra.select(ch)) == 3)
local ok, four = ch:try_receive(60)
assert(ok and four == 4)

-- A mailbox: 2 messages, sent natively and (a table) by the Lua loop, received
-- natively and with a timeout; the receiver sends their sum back on `done` (a 3rd).
local done = lutra.channel()
local p = lutra.spawn(function(done)
  local a = lutra.receive()
  local b = lutra.receive(60)
  done:send(a + b[1])
end, done)
p:send(1)
p:send({ 2 })
assert(done:receive() == 3)

-- luaproc's named channels: 1 message (4 + 3 + 1 = 8 in all).
assert(luaproc.newchannel("stats"))
lutra.spawn(function()
  local luaproc = require "luaproc"
  assert(luaproc.send("stats", 5))
end)
assert(luaproc.receive("stats") == 5)
