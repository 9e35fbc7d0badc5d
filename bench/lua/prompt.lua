-- Prompt wake-ups beside CPU-bound processes (one spinning process per worker):
--   lutra -w W prompt.lua sleep N    a process sleeps 0.05 s N times; prints the
--                                    99th percentile of the time each sleep took
--   (module) prompt.lua host N       the host sends to an echoing process and waits for
--                                    the answer, N times; prints the round trip's p99
-- Output: "figure p99 SECONDS", "figure median SECONDS", then "prompt: ok". Under
-- `lutra` the main chunk is a process: `host` then measures a process's round trip.
local mode, n = ...
n = math.tointeger(tonumber(n)) or 100
assert(mode == "sleep" or mode == "host", "mode: sleep or host")

local function spinner(stop)
  local x = 0
  while not stop:try_receive(0) do
    for i = 1, 100000 do x = x + (i & 7) end
  end
  return x
end

local function sleeper(times)
  local took = {}
  for _ = 1, times do
    local t = lutra.now()
    lutra.sleep(0.05)
    took[#took + 1] = lutra.now() - t
  end
  return table.concat(took, " ")
end

local spinners = lutra.workers()
local stop = lutra.channel(spinners)
local spinning = {}
for i = 1, spinners do spinning[i] = lutra.spawn(spinner, stop) end

local took = {}
if mode == "sleep" then
  for v in lutra.spawn(sleeper, n):join():gmatch("%S+") do took[#took + 1] = tonumber(v) end
else
  local ask, answer = lutra.channel(), lutra.channel()
  local echo = lutra.spawn(function(ask, answer)
    for v in ask:values() do answer:send(v) end
  end, ask, answer)
  for i = 1, n do
    local t = lutra.now()
    ask:send(i)
    assert(answer:receive() == i)
    took[#took + 1] = lutra.now() - t
  end
  ask:close()
  echo:join()
end
for i = 1, spinners do stop:send(true) end
for i = 1, spinners do spinning[i]:join() end

table.sort(took)
print(string.format("figure p99 %.4f", took[math.ceil(#took * 0.99)]))
print(string.format("figure median %.4f", took[#took // 2 + 1]))
print("prompt: ok " .. #took)
