-- lutra-args: --mailbox-cap 4
-- `p:send(...)` and `lutra.receive()` take a native path (api/native/mailbox.rs) for
-- scalars and handles; everything else falls back to the Lua functions, with the
-- same answers and errors at the caller's line.
local me = lutra.self()
local ch = lutra.channel(1)

-- Handles travel by reference: the receiver gets the very same handles.
local child = lutra.spawn(function(parent, ch)
  parent:send("hello", lutra.self(), ch, 7, 2.5, true, nil, "x")
  ch:send("through the channel it was sent")
  return lutra.receive()
end, me, ch)
local tag, who, got_ch, n, f, b, none, s = lutra.receive()
assert(tag == "hello" and who == child and got_ch == ch, "the handles received are the ones sent")
assert(n == 7 and math.type(n) == "integer" and f == 2.5 and b == true and none == nil and s == "x")
assert(ch:receive() == "through the channel it was sent")
who:send("bye")
assert(child:join() == "bye")

-- A handle new to the receiving process (it never saw that process) is made on
-- arrival, and is then the one every later message gives.
local parent_side = lutra.spawn(function(parent)
  local grandchild = lutra.spawn(function() return "grandchild" end)
  parent:send(grandchild)
  parent:send(grandchild, "again")
end, me)
local g1 = lutra.receive()
local g2, again = lutra.receive()
assert(rawequal(g1, g2) and again == "again", "one userdata per process")
assert(g1:join() == "grandchild")
parent_side:join()

-- Beyond the mailbox's cap (4) a sender parks until the owner takes messages; the
-- order of one sender's messages is kept.
local count = 1000
local sink = lutra.spawn(function(count)
  local sum = 0
  for i = 1, count do
    local k = lutra.receive()
    assert(k == i, "message " .. i .. " arrived as " .. tostring(k))
    sum = sum + k
  end
  return sum
end, count)
for i = 1, count do sink:send(i) end
assert(sink:join() == count * (count + 1) // 2)

-- Values the native path does not take (a table) go through the fallback.
local echo = lutra.spawn(function(parent)
  local t = lutra.receive()
  parent:send(t)
end, me)
echo:send({ 1, 2, { three = 3 } })
local t = lutra.receive()
assert(t[1] == 1 and t[2] == 2 and t[3].three == 3)
echo:join()

-- Errors at the caller's line.
local here = "mailbox_native.lua:"
local ok, err = pcall(function() echo:send(coroutine.create(print)) end)
assert(not ok and tostring(err):find(here .. "61:", 1, true), tostring(err))
ok, err = pcall(function() echo:send("anyone?") end)
assert(not ok and tostring(err):find(here .. "63:", 1, true) and err:find("finished"), tostring(err))
ok, err = pcall(function() lutra.receive("soon") end)
assert(not ok and tostring(err):find(here .. "65: bad argument #1 to 'receive'", 1, true), tostring(err))

-- A process handle's user value (its tagged address) cannot be changed from Lua.
assert(type(debug.getuservalue(echo)) == "userdata")
ok, err = pcall(debug.setuservalue, echo, "not an address")
assert(not ok and err:find("process's user value cannot change", 1, true), err)
print("ok")
