-- luaproc's API with its semantics and messages: named channels in a registry,
-- rendezvous send/receive, the async receive flag, delchannel waking blocked
-- processes, newproc from a string or a function (upvalues copied as luaproc does),
-- worker count, wait, recycle.
local luaproc = require "luaproc"
assert(package.loaded.luaproc == luaproc)

-- channels
assert(luaproc.newchannel("c") == true)
local none, err = luaproc.newchannel("c")
assert(none == nil and err == "channel 'c' already exists", err)
none, err = luaproc.send("nope", 1)
assert(none == nil and err == "channel 'nope' does not exist", err)
none, err = luaproc.receive("nope")
assert(none == nil and err == "channel 'nope' does not exist", err)
none, err = luaproc.delchannel("nope")
assert(none == nil and err == "channel 'nope' does not exist", err)

-- async receive with no sender waiting
none, err = luaproc.receive("c", true)
assert(none == nil and err == "no senders waiting on channel 'c'", err)

-- rendezvous: the sender returns true once received
assert(luaproc.newchannel("ack"))
assert(luaproc.newproc([[
  local ok = luaproc.send("c", "x", 2, true, nil)
  luaproc.send("ack", ok)
]]))
local a, b, c, d = luaproc.receive("c")
assert(a == "x" and b == 2 and c == true and d == nil)
assert(luaproc.receive("ack") == true)
-- (an async receive taking a waiting sender: crates/lutra-lua/tests/blocking.rs)

-- newproc from a function: upvalues that are scalars are copied
local greeting, count = "hi", 3
-- (the function names luaproc through a global: a local table would be refused)
assert(luaproc.newproc(function()
  require("luaproc").send("c", greeting, count)
end))
local g, n = luaproc.receive("c")
assert(g == "hi" and n == 3)
-- a table upvalue is refused, as luaproc refuses it
local t = {}
none, err = luaproc.newproc(function() return t end)
assert(none == nil and err:find("upvalue of unsupported type 'table'"), err)
-- a syntax error or a wrong type: nil and a message
none, err = luaproc.newproc("this is not lua")
assert(none == nil and type(err) == "string")
none, err = luaproc.newproc(42)
assert(none == nil and err == "cannot use 'number' to create a new process", err)

-- delchannel wakes blocked senders and receivers with luaproc's messages
-- (delchannel waking a blocked receive or send: crates/lutra-lua/tests/blocking.rs)
assert(luaproc.newchannel("doomed"))
assert(luaproc.delchannel("doomed") == true)
assert(luaproc.newchannel("doomed2"))
assert(luaproc.delchannel("doomed2"))
-- a deleted name can be created again
assert(luaproc.newchannel("doomed"))

-- workers, recycle, misuse
luaproc.setnumworkers(3)
assert(luaproc.getnumworkers() == 3)
luaproc.setnumworkers(2)
assert(luaproc.getnumworkers() == 2)
local ok, msg = pcall(luaproc.setnumworkers, 0)
assert(not ok and msg:find("number of workers must be positive"), msg)
assert(luaproc.recycle(4) == true)
ok, msg = pcall(luaproc.recycle, -1)
assert(not ok and msg:find("recycle limit must be positive"), msg)
ok, msg = pcall(luaproc.send)
assert(not ok and msg:find("bad argument #1 to 'send'"), msg)

-- wait: returns once every other process has finished
assert(luaproc.newchannel("slow"))
assert(luaproc.newproc([[ local t = os.time() + 0 for i = 1, 1e5 do end ]]))
luaproc.wait()
print("ok")
