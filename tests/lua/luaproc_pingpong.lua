-- expect-stdout: ping 1
-- expect-stdout: pong 3
-- expect-stdout: done
-- A classic luaproc program: two processes play ping-pong over named channels, the
-- main script waits for them with luaproc.wait().
local luaproc = require "luaproc"
luaproc.setnumworkers(2)
assert(luaproc.getnumworkers() == 2)

assert(luaproc.newchannel("ping"))
assert(luaproc.newchannel("pong"))
assert(luaproc.newchannel("result"))

assert(luaproc.newproc([[
  for i = 1, 3 do
    luaproc.send("ping", "ping", i)
    local what, n = luaproc.receive("pong")
    print(what .. " " .. n)
  end
  luaproc.send("result", "done")
]]))
assert(luaproc.newproc([[
  for i = 1, 3 do
    local what, n = luaproc.receive("ping")
    print(what .. " " .. n)
    luaproc.send("pong", "pong", n)
  end
]]))
print(luaproc.receive("result"))
luaproc.wait()
