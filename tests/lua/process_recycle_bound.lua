-- lutra-args: -w 1
-- Only as many live states as the recycle limit take a baseline; the others are
-- dropped when their process ends, and their finalizers still run, before a joiner
-- wakes, as with a recycled state. Short-lived processes spawned while long-lived
-- ones hold every baseline are still recycled.
require("luaproc").recycle(2)
local path = os.tmpname()
local go = lutra.channel()
local procs = {}
for i = 1, 5 do
  procs[i] = lutra.spawn(function(go, path, i)
    -- a live global with a finalizer: run by the recycle's collection or the drop
    keep = setmetatable({}, { __gc = function()
      local f = assert(io.open(path, "a"))
      f:write(i, "\n")
      f:close()
    end })
    go:receive()
  end, go, path, i)
end
lutra.yield()
for _ = 1, 5 do go:send(true) end
for i = 1, 5 do procs[i]:join() end
local seen = {}
for line in io.lines(path) do seen[#seen + 1] = tonumber(line) end
os.remove(path)
table.sort(seen)
assert(#seen == 5, "finalizers run: " .. #seen)
for i = 1, 5 do assert(seen[i] == i, "finalizer " .. i) end

require("luaproc").recycle(64)
local long = {}
for i = 1, 70 do long[i] = lutra.spawn(function(go) go:receive() end, go) end
lutra.yield()
local states, reused = {}, 0
for _ = 1, 100 do
  local state = lutra.spawn(function() return tostring(math) end):join()
  if states[state] then reused = reused + 1 end
  states[state] = true
end
for _ = 1, 70 do go:send(true) end
for i = 1, 70 do long[i]:join() end
assert(reused >= 95, "short-lived processes recycled: " .. reused)
print("process_recycle_bound ok", reused)
