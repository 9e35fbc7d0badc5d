-- lutra-args: -w 2
-- A CPU-bound run uses no thread beyond the workers, the preemption ticker and the
-- program's main thread (which waits for the main process): nothing blocks, so no
-- other thread is started. Counted from /proc/self/status while the processes run.
local function threads()
  local f = assert(io.open("/proc/self/status"))
  local status = f:read("a")
  f:close()
  return assert(tonumber(status:match("Threads:%s*(%d+)")), "no Threads: line")
end

local started = lutra.channel(8)
local ps = {}
for i = 1, 8 do
  ps[i] = lutra.spawn(function(started, n)
    started:send(true)
    local s = 0
    for j = 1, n do s = s + (j & 7) end
    return s
  end, started, 3000000)
end
for _ = 1, 8 do started:receive() end
local during = threads()
for i = 1, 8 do assert(ps[i]:join() == 3000000 // 8 * 28) end
local after = threads()
local expected = lutra.workers() + 2
assert(during == expected, ("%d threads while CPU-bound processes ran, expected %d"):format(during, expected))
assert(after == expected, ("%d threads after them, expected %d"):format(after, expected))
print("threads: ok " .. during)
