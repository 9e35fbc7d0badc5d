-- lutra-args: -w 2 --stats
-- expect-stderr: blocked calls      0 hand-offs, 0 threads started
-- A CPU-bound run hands no worker over: while processes compute (each preempted
-- many times: a slice is 5 ms) the program has the same threads as before they
-- started: the workers, the preemption ticker and the main thread, no spare.
local function threads()
  local status = assert(io.open("/proc/self/status")):read("a")
  return assert(math.tointeger(tonumber(status:match("Threads:%s*(%d+)"))))
end

-- Every worker has run a slice (so the ticker runs) before the count is taken.
local warm = {}
for i = 1, 4 do warm[i] = lutra.spawn(function(n) return n end, i) end
for i = 1, 4 do warm[i]:join() end
local before = threads()

local spinners = {}
for i = 1, 4 do
  spinners[i] = lutra.spawn(function()
    local s = 0
    for j = 1, 30000000 do s = s + (j & 7) end
    return s
  end)
end
for i = 1, 4 do assert(spinners[i]:join() == 105000000) end
local after = threads()
assert(after == before, string.format("threads before the run: %d, after: %d", before, after))
