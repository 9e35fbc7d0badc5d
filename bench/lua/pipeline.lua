-- A pipeline with parallel work between rendezvous: `pairs` senders each work
-- `spin` loop steps before every send, and as many receivers after every receive,
-- all on one channel. Unlike experiment 2 on one channel (channels.lua 1), a second
-- worker pays here: the scheduler's rest (lutra-sched/src/rest.rs) must not take it
-- away. Compare `lutra -w 1` with `lutra -w 2`.
--   lutra -w W pipeline.lua [messages] [pairs] [spin]
if not lutra then dofile((arg and arg[0] or ""):match("^(.-)[^/]*$") .. "shim.lua") end

local messages, pairs_, spin = ...
messages = math.tointeger(tonumber(messages)) or 30000
pairs_ = math.tointeger(tonumber(pairs_)) or 4
spin = math.tointeger(tonumber(spin)) or 150

local function sender(ch, count, steps)
  for i = 1, count do
    local x = 0
    for j = 1, steps do x = x + j end
    ch:send(i)
  end
  return 0
end

local function receiver(ch, count, steps)
  local sum = 0
  for _ = 1, count do
    sum = sum + ch:receive()
    local x = 0
    for j = 1, steps do x = x + j end
  end
  return sum
end

local ch = lutra.channel()
local procs = {}
for _ = 1, pairs_ do
  procs[#procs + 1] = lutra.spawn(sender, ch, messages, spin)
  procs[#procs + 1] = lutra.spawn(receiver, ch, messages, spin)
end
local total = 0
for _, p in ipairs(procs) do total = total + (p:join() or 0) end
assert(total == pairs_ * messages * (messages + 1) // 2, "lost or duplicated messages")
print("pipeline: ok " .. total)
