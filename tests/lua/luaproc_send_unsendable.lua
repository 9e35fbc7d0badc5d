-- luaproc.send of a value that cannot cross (a coroutine): as under luaproc, the
-- receiver it meets is woken with nil and the reason, and the sender gets them too.
local luaproc = require "luaproc"
assert(luaproc.newchannel("c"))
assert(luaproc.newchannel("done"))
assert(luaproc.newproc([[
  local value, why = luaproc.receive("c")
  luaproc.send("done", value == nil and type(why) == "string" and why or "got a value")
]]))
local ok, why = luaproc.send("c", coroutine.create(function() end))
assert(ok == nil and type(why) == "string", tostring(why))
local seen = luaproc.receive("done")
assert(seen == why, tostring(seen))
print("ok")
