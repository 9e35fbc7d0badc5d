-- A send that fails (here: the host would wait forever, a deadlock) delivers
-- nothing: no later receive gets its message, a buffered channel keeps the room it
-- held, and a table it moved (lutra.move) stays with the sender.
-- expect-stdout: ok
local luaproc = require "luaproc"
local lutra = require "lutra"

assert(luaproc.newchannel("c"))
local ok, err = pcall(luaproc.send, "c", "ghost")
assert(not ok and err:find("deadlock"), err)
local got = luaproc.receive("c", true)
assert(got == nil, "a failed luaproc.send was delivered: " .. tostring(got))

local ch = lutra.channel()
ok, err = pcall(ch.send, ch, "ghost")
assert(not ok and err:find("deadlock"), err)
local took, value = ch:try_receive()
assert(not took, "a failed ch:send was delivered: " .. tostring(value))

local t = { 1, 2, { 3 } }
ok, err = pcall(ch.send, ch, lutra.move(t))
assert(not ok and err:find("deadlock"), err)
assert(not lutra.is_moved(t) and t[2] == 2 and t[3][1] == 3, "a failed send moved its table")
assert(not ch:try_receive(), "a failed send of a moved table was delivered")

local b = lutra.channel(1)
b:send("first")
ok, err = pcall(b.send, b, "ghost")
assert(not ok and err:find("deadlock"), err)
assert(b:receive() == "first")
took, value = b:try_receive()
assert(not took, "a failed buffered send was delivered: " .. tostring(value))
b:send("room") -- the withdrawn message left its room: this send does not wait
assert(b:receive() == "room")
print("ok")
