-- Wake-ups that scale: N processes wait to receive, then the main
-- chunk sends N values, one for each; every receiver does a little work with its
-- value and reports it on a buffered channel.
--   lutra -w W wake.lua one N    all N receivers wait on one rendezvous channel
--   lutra -w W wake.lua own N    each receiver waits on a rendezvous channel of its own
-- Both keep N processes alive at once and make N rendezvous; `one` minus `own` is
-- what sharing one channel's wait list costs (with a wake-up for every waiter on
-- every send, it grew as N²).
if not lutra then dofile((arg and arg[0] or ""):match("^(.-)[^/]*$") .. "shim.lua") end

local mode, n = ...
n = math.tointeger(tonumber(n)) or 1000
assert(mode == "one" or mode == "own", "mode: one or own")

local function receiver(ch, results)
  local v = ch:receive()
  local s = 0
  for i = 1, 200 do s = s + (v + i) % 7 end -- the work
  results:send(v, s)
end

local results = lutra.channel(n)
local channels = {}
local shared = lutra.channel()
for i = 1, n do
  channels[i] = mode == "one" and shared or lutra.channel()
  lutra.spawn(receiver, channels[i], results)
end
for i = 1, n do channels[i]:send(i) end

local seen, total = {}, 0
for _ = 1, n do
  local v = results:receive()
  assert(not seen[v], "value received twice")
  seen[v] = true
  total = total + v
end
assert(total == n * (n + 1) // 2, "lost values")
print("wake: ok " .. n)
