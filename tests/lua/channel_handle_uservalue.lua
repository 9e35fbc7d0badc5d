-- A channel handle's user value (its channel's address, which the native send and
-- receive trust) cannot be changed from Lua, nor can a light userdata become anyone's
-- user value; other user values still work as in stock Lua.
local a, b = lutra.channel(1), lutra.channel(1)
local address = debug.getuservalue(a)
assert(type(address) == "userdata")

local ok, err = pcall(debug.setuservalue, a, debug.getuservalue(b))
assert(not ok and err:find("light userdata cannot be a user value", 1, true), err)
ok, err = pcall(debug.setuservalue, a, "not an address")
assert(not ok and err:find("channel's user value cannot change", 1, true), err)
assert(debug.getuservalue(a) == address, "unchanged")

-- The handles still work, each on its own channel.
a:send("to a")
b:send("to b")
assert(a:receive() == "to a" and b:receive() == "to b")

-- Another userdata (a file) keeps stock behaviour: it has no user value slot.
assert(debug.setuservalue(io.stdout, 1) == nil)
print("ok")
