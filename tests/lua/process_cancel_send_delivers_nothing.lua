-- lutra-args: --mailbox-cap 1
-- A send stopped by a cancellation delivers nothing: a process parked in a
-- rendezvous `ch:send`, in `p:send` to a full mailbox, or in luaproc's `send`, then
-- cancelled, leaves no message behind for a later receive. Each sender is cancelled
-- only once it is seen waiting (`p:status()`), so the send is provably parked.
local luaproc = require "luaproc"

local function wait_until_waiting(p)
  while select(1, p:status()) ~= "waiting" do lutra.yield() end
end

local function cancelled(p)
  wait_until_waiting(p)
  assert(p:cancel("stop") == true)
  local ok, err = p:join()
  assert(ok == false and err == "cancelled: stop", tostring(err))
end

-- ch:send on a rendezvous channel.
local ch = lutra.channel()
cancelled(lutra.spawn(function(ch) ch:send("ghost") end, ch))
local got, why = ch:try_receive()
assert(got == false and why == "empty", "a cancelled send delivered " .. tostring(got))

-- p:send to a full mailbox (capacity 1: one message fills it). The owner reads its
-- mailbox only when told to on `go`.
local go = lutra.channel()
local owner = lutra.spawn(function(go)
  go:receive()
  local first = lutra.receive()
  assert(first == "filler", tostring(first))
  local second, reason = lutra.receive(0)
  assert(second == nil and reason == "timeout",
    "a cancelled p:send delivered " .. tostring(second))
  return "checked"
end, go)
owner:send("filler")
cancelled(lutra.spawn(function(owner) owner:send("ghost") end, owner))
go:send(true)
assert(owner:join() == "checked")

-- luaproc.send on a luaproc channel.
luaproc.newchannel("cancel-send")
cancelled(lutra.spawn(function()
  local luaproc = require "luaproc"
  luaproc.send("cancel-send", "ghost")
end))
local sender = lutra.spawn(function()
  local luaproc = require "luaproc"
  luaproc.send("cancel-send", "real")
end)
local first = luaproc.receive("cancel-send")
assert(first == "real", "a cancelled luaproc.send delivered " .. tostring(first))
sender:join()
print("cancelled sends deliver nothing")
