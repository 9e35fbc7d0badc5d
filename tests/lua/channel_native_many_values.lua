-- lutra-args: -w 1
-- Messages of 0 to 24 values through the native calls (`ch:send` / `ch:receive`,
-- `p:send` / `lutra.receive`, `luaproc.send` / `luaproc.receive`), each taken once by
-- a receiver that found it waiting and once by a receiver that parked first. A
-- native call on a handle leaves the handle's user value on the stack above its
-- arguments (`api/native/handles.rs`): every value pushed above it must still arrive,
-- in order, past the room Lua gives a C function without asking (`LUA_MINSTACK`).
local luaproc = require "luaproc"
local MAX = 24

local function values(n)
  local t = {}
  for i = 1, n do t[i] = i * 10 end
  return table.unpack(t, 1, n)
end

local function check(n, ...)
  assert(select("#", ...) == n, n .. " values sent, " .. select("#", ...) .. " received")
  for i = 1, n do assert(select(i, ...) == i * 10, "value " .. i .. " of " .. n) end
end

local ch = lutra.channel()
assert(luaproc.newchannel("many"))
local done = lutra.channel()

-- The receiver: for each count, a lutra channel, its mailbox, a luaproc channel.
local p = lutra.spawn(function(ch, done, MAX, check)
  local luaproc = require "luaproc"
  for n = 0, MAX do
    check(n, ch:receive())
    check(n, lutra.receive())
    check(n, luaproc.receive("many"))
  end
  done:send("ok")
end, ch, done, MAX, check)

for n = 0, MAX do
  -- Odd counts: the receiver waits first (parked); even: the message waits for it.
  if n % 2 == 1 then lutra.yield() end
  ch:send(values(n))
  if n % 2 == 1 then lutra.yield() end
  p:send(values(n))
  if n % 2 == 1 then lutra.yield() end
  assert(luaproc.send("many", values(n)))
end
assert(done:receive() == "ok")
p:join()
print("native many values: ok")
