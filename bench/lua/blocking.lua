-- Blocking C calls beside other processes:
--   lutra -w W blocking.lua execute N     N processes each run os.execute("sleep 0.5")
--   lutra -w W blocking.lua pipe R WORK   one CPU-bound process per worker, WORK loop
--                                         iterations each, beside R processes each
--                                         blocked 1 s reading a pipe (`io.popen` of
--                                         `sleep 1`); prints "figure rate ITERATIONS/S"
--                                         of the CPU-bound work (R = 0: without them),
--                                         and "figure spare_threads N": the threads
--                                         beyond the workers, the preemption ticker
--                                         and the main thread once the CPU-bound
--                                         work is done (0 when nothing blocked)
-- Output ends with "blocking: ok".
local mode, a, b = ...
if mode == "execute" then
  local n = math.tointeger(tonumber(a)) or 8
  local ps = {}
  for i = 1, n do
    ps[i] = lutra.spawn(function() return os.execute("sleep 0.5") end)
  end
  for i = 1, n do assert(ps[i]:join(), "sleep failed") end
  print("blocking: ok " .. n)
  return
end
assert(mode == "pipe", "mode: execute or pipe")
local readers, work = math.tointeger(tonumber(a)) or 64, math.tointeger(tonumber(b)) or 100000000
local start = lutra.now()
local blocked = {}
for i = 1, readers do
  blocked[i] = lutra.spawn(function()
    local pipe = io.popen("sleep 1")
    local text = pipe:read("a")
    pipe:close()
    return text
  end)
end
local spinners = {}
for i = 1, lutra.workers() do
  spinners[i] = lutra.spawn(function(n)
    local s = 0
    for j = 1, n do s = s + (j & 7) end
    return lutra.now(), s
  end, work)
end
local last = start
for i = 1, #spinners do last = math.max(last, (spinners[i]:join())) end
local status = assert(io.open("/proc/self/status")):read("a")
local threads = math.tointeger(tonumber(status:match("Threads:%s*(%d+)")))
print(string.format("figure spare_threads %d", threads - lutra.workers() - 2))
for i = 1, readers do assert(blocked[i]:join() == "") end
print(string.format("figure rate %.0f", #spinners * work / (last - start)))
print("blocking: ok " .. readers)
