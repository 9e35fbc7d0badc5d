-- Experiment 2 through luaproc's API (`require "luaproc"`): 50 senders and 50
-- receivers, each sending or receiving 10,000 messages over C named rendezvous
-- channels (sender k and receiver k use channel (k - 1) % C + 1); `channels.lua` is
-- the same through the `lutra` channel API. The payload is each message's number
-- (`int`, the default) or the string "message" (`string`, as in the paper).
--   lutra -w W luaproc_channels.lua C [messages] [pairs] [int|string]
local luaproc = require "luaproc"

local c, messages, pairs_, payload = ...
c = math.tointeger(tonumber(c)) or 1
messages = math.tointeger(tonumber(messages)) or 10000
pairs_ = math.tointeger(tonumber(pairs_)) or 50
payload = payload or "int"
assert(payload == "int" or payload == "string", "payload: int or string")

-- The bodies of the senders and receivers (messages, channel name); with strings, a
-- receiver's sum is the sum an integer receiver would make.
local sender, receiver = [[
    local send = luaproc.send
    for i = 1, %d do send(%q, i) end
  ]], [[
    local receive = luaproc.receive
    local sum = 0
    for _ = 1, %d do sum = sum + receive(%q) end
    luaproc.send("sums", sum)
  ]]
if payload == "string" then
  sender, receiver = [[
    local send = luaproc.send
    for _ = 1, %d do send(%q, "message") end
  ]], [[
    local receive = luaproc.receive
    local n = %d
    for _ = 1, n do
      if receive(%q) ~= "message" then error("wrong message") end
    end
    luaproc.send("sums", n * (n + 1) // 2)
  ]]
end

for i = 1, c do assert(luaproc.newchannel("ch" .. i)) end
assert(luaproc.newchannel("sums"))

for k = 1, pairs_ do
  local name = "ch" .. ((k - 1) % c + 1)
  assert(luaproc.newproc(sender:format(messages, name)))
  assert(luaproc.newproc(receiver:format(messages, name)))
end
local total = 0
for _ = 1, pairs_ do total = total + luaproc.receive("sums") end
assert(total == pairs_ * messages * (messages + 1) // 2, "lost or duplicated messages")
luaproc.wait()
print("luaproc channels: ok " .. total)
