-- A send that fails delivers nothing: its message is taken back, so no later
-- receive gets it. Here it fails because it cannot wait: inside lutra.atomic (the Lua
-- path), and in a coroutine resumed from a C function (a table.sort comparator: the
-- native path); a table it carried with lutra.move stays with the sender.
local ch = lutra.channel()

local ok, err = pcall(lutra.atomic, function() ch:send("ghost") end)
assert(not ok and err:find("inside lutra.atomic"), err)
local took, value = ch:try_receive()
assert(not took, "a send that failed inside atomic was delivered: " .. tostring(value))

local function send_from_comparator(send)
  table.sort({ 2, 1 }, function(a, b)
    local co = coroutine.wrap(send)
    co()
    return a < b
  end)
end
ok, err = pcall(send_from_comparator, function() ch:send("ghost") end)
assert(not ok and err:find("cannot block"), err)
took, value = ch:try_receive()
assert(not took, "a ch:send that could not wait was delivered: " .. tostring(value))

local luaproc = require "luaproc"
assert(luaproc.newchannel("c"))
ok, err = pcall(send_from_comparator, function() luaproc.send("c", "ghost") end)
assert(not ok and err:find("cannot block"), err)
assert(luaproc.receive("c", true) == nil, "a luaproc.send that could not wait was delivered")

-- A process's mailbox: fill it, then a send that must wait fails.
local me = lutra.self()
local sent = 0
ok, err = pcall(send_from_comparator, function()
  while true do
    me:send(sent)
    sent = sent + 1
  end
end)
assert(not ok and err:find("cannot block"), err)
-- The mailbox is full: a send of a moved table that cannot wait keeps the table.
local t = { "kept" }
ok, err = pcall(send_from_comparator, function() me:send(lutra.move(t)) end)
assert(not ok and err:find("cannot block"), err)
assert(not lutra.is_moved(t) and t[1] == "kept", "a failed p:send moved its table")
for i = 0, sent - 1 do assert(lutra.receive() == i) end
local extra = table.pack(lutra.receive(0))
assert(extra[1] == nil, "a p:send that could not wait was delivered: " .. tostring(extra[1]))
print("ok")
