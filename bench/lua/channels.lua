-- Seed 001, experiment 2: 100 processes, 50 senders and 50 receivers, each sending
-- or receiving 10,000 messages over C rendezvous channels (sender k and receiver k
-- use channel (k - 1) % C + 1). The payload is each message's number (`int`, the
-- default) or the string "message" (`string`, as in the paper).
--   lutra -w W channels.lua C [messages] [pairs] [int|string]
--   lua5.4 channels.lua C ...
if not lutra then dofile((arg and arg[0] or ""):match("^(.-)[^/]*$") .. "shim.lua") end

local c, messages, pairs_, payload = ...
c = math.tointeger(tonumber(c)) or 1
messages = math.tointeger(tonumber(messages)) or 10000
pairs_ = math.tointeger(tonumber(pairs_)) or 50
payload = payload or "int"
assert(payload == "int" or payload == "string", "payload: int or string")

local channels = {}
for i = 1, c do channels[i] = lutra.channel() end

local function sender(ch, n)
  for i = 1, n do ch:send(i) end
end
local function receiver(ch, n)
  local sum = 0
  for _ = 1, n do sum = sum + ch:receive() end
  return sum
end
-- With strings, a receiver's sum is the sum an integer receiver would make.
local function string_sender(ch, n)
  for _ = 1, n do ch:send("message") end
end
local function string_receiver(ch, n)
  for _ = 1, n do
    if ch:receive() ~= "message" then error("wrong message") end
  end
  return n * (n + 1) // 2
end
if payload == "string" then sender, receiver = string_sender, string_receiver end

local procs = {}
for k = 1, pairs_ do
  local ch = channels[(k - 1) % c + 1]
  procs[#procs + 1] = lutra.spawn(sender, ch, messages)
  procs[#procs + 1] = lutra.spawn(receiver, ch, messages)
end
local total = 0
for _, p in ipairs(procs) do total = total + (p:join() or 0) end
assert(total == pairs_ * messages * (messages + 1) // 2, "lost or duplicated messages")
print("channels: ok " .. total)
