-- Read-only lookups in one shared table from P processes: each process reads
-- `t[k]` N times (outside `lutra.atomic`: every lookup is a transaction of its own)
-- over K integer keys. Nothing is written after the table is filled, so the
-- lookups of different processes should scale with the workers.
--   lutra -wW shared_read.lua P N K
local procs, n, keys = ...
procs = math.tointeger(tonumber(procs)) or 2
n = math.tointeger(tonumber(n)) or 2000000
keys = math.tointeger(tonumber(keys)) or 1024

local init = {}
for k = 1, keys do init[k] = k end
local t = lutra.shared(init)

local function reader(t, n, keys)
  local sum = 0
  for i = 1, n do
    sum = sum + t[i % keys + 1]
  end
  return sum
end

local ps = {}
for i = 1, procs do ps[i] = lutra.spawn(reader, t, n, keys) end
local total = 0
for i = 1, procs do total = total + ps[i]:join() end
-- Each process reads every key n / keys times (n a multiple of keys).
local expected = procs * (n // keys) * (keys * (keys + 1) // 2)
assert(total == expected, string.format("sum %d, expected %d", total, expected))
print(string.format("shared_read: ok %d x %d lookups over %d keys", procs, n, keys))
