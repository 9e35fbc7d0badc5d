-- lutra-args: -w 1 --mailbox-cap 4
-- A native call on the handle a process's last native call was made on finds its
-- channel or process by the userdata's address alone (api/native/handles.rs), the
-- userdata anchored meanwhile. Calls that alternate between handles (channels, a
-- process), and handles collected in between, each reach their own object; a new
-- handle never passes for one collected before it.

-- Alternating between two channels and a process's mailbox, each call on another
-- handle than the last.
local a, b = lutra.channel(4), lutra.channel(4)
local me = lutra.self()
for round = 1, 3 do
  a:send("a", round)
  b:send("b", round)
  me:send("me", round)
  a:send("a again", round)
  local x, n = b:receive()
  assert(x == "b" and n == round, tostring(x))
  x, n = a:receive()
  assert(x == "a" and n == round, tostring(x))
  x, n = lutra.receive()
  assert(x == "me" and n == round, tostring(x))
  x, n = a:receive()
  assert(x == "a again" and n == round, tostring(x))
end

-- Handles dropped and collected while others are made: every native send reaches
-- the channel of its own handle (read back through `try_receive`, which is not
-- native), and a receive from the one called last still works after a collection.
for i = 1, 200 do
  local c = lutra.channel(1)
  c:send(i)
  local ok, v = c:try_receive()
  assert(ok == true and v == i, "message " .. i .. " went elsewhere")
  c:send(-i)
  c = nil
  collectgarbage()
  local d = lutra.channel(1)
  d:send(i * 2)
  collectgarbage()
  assert(d:receive() == i * 2)
end

-- Across processes: a rendezvous on one channel, whose handle each side noted
-- last, then a channel made by the receiver and handed over.
local ch = lutra.channel()
local p = lutra.spawn(function(ch)
  local sum = 0
  for _ = 1, 100 do sum = sum + ch:receive() end
  local back = lutra.channel()
  ch:send(back)
  return sum + back:receive()
end, ch)
for i = 1, 100 do ch:send(i) end
local back = ch:receive()
back:send(1000)
assert(p:join() == 5050 + 1000)
print("ok")
