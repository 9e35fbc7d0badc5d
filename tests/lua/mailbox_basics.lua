-- Actor mailboxes: `p:send(...)` queues a message for process p, which takes it with
-- `lutra.receive([timeout])` (nil, "timeout" when the time runs out); FIFO per sender.
local me = lutra.self()
local echo = lutra.spawn(function(parent)
  while true do
    local what, n = lutra.receive()
    if what == "stop" then return "stopped" end
    parent:send("echo", what, n)
  end
end, me)

for i = 1, 5 do echo:send("msg", i) end
for i = 1, 5 do
  local tag, what, n = lutra.receive()
  assert(tag == "echo" and what == "msg" and n == i)
end
echo:send("stop")
assert(echo:join() == "stopped")

-- timeout
local t = lutra.receive(0.05)
assert(t == nil)
local none, why = lutra.receive(0)
assert(none == nil and why == "timeout")

-- sending to a finished process raises
local ok, err = pcall(echo.send, echo, "anyone?")
assert(not ok and err:find("finished"), err)

-- a process's own handle
assert(lutra.self() == me)
assert(lutra.spawn(function() return lutra.self() end):join() ~= me)
print("ok")
