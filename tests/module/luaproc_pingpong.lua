-- A classic luaproc program under a stock lua5.4: the main state (not a process)
-- sends and receives on named channels, blocking its OS thread, then waits.
local luaproc = require "luaproc"
luaproc.setnumworkers(2)
assert(luaproc.getnumworkers() == 2)
assert(luaproc.newchannel("ping"))
assert(luaproc.newchannel("pong"))

assert(luaproc.newproc([[
  while true do
    local what, n = luaproc.receive("ping")
    if what == "stop" then break end
    luaproc.send("pong", "pong", n)
  end
]]))
for i = 1, 100 do
  assert(luaproc.send("ping", "ping", i) == true)
  local what, n = luaproc.receive("pong")
  assert(what == "pong" and n == i)
end
luaproc.send("ping", "stop")
local none, err = luaproc.receive("pong", true)
assert(none == nil and err == "no senders waiting on channel 'pong'", err)

-- luaproc and lutra share the runtime
local lutra = require "lutra"
assert(luaproc.newchannel("mixed"))
lutra.spawn(function() require("luaproc").send("mixed", "from a lutra process") end)
assert(luaproc.receive("mixed") == "from a lutra process")

luaproc.wait()
assert(luaproc.delchannel("ping") and luaproc.delchannel("pong"))
print("ok")
