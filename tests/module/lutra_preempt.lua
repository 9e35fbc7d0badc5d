-- expect-stdout: preempt ok
-- Under the module, preemption by time slice works as under `lutra`: with one
-- worker and 1 ms slices, a spinning process only sees the ticks
-- another process sends if it is preempted (it would spin forever otherwise), and
-- the host program's own SIGURG handler is not disturbed (none here: the host is a
-- stock lua5.4). Runs in a child lua5.4 so that the environment can choose the
-- runtime's options.
local lua = arg[-1]
local code = [[
local lutra = require "lutra"
assert(lutra.workers() == 1)
local ticks = lutra.channel(20)
local spinner = lutra.spawn(function(ticks)
  local seen, x = 0, 0
  while seen < 20 do
    for i = 1, 1000 do x = x + i % 3 end
    local got, tick = ticks:try_receive()
    if got then assert(tick == seen + 1) seen = tick end
  end
  return seen
end, ticks)
lutra.spawn(function(ticks)
  for i = 1, 20 do ticks:send(i) lutra.yield() end
end, ticks)
assert(spinner:join() == 20)
print("spinner preempted 20 times")
]]
local pipe = assert(io.popen("LUTRA_WORKERS=1 LUTRA_PREEMPT=1 " .. lua .. " -e '" .. code
  .. "' 2>&1; echo \"status=$?\""))
local out = pipe:read("a")
pipe:close()
assert(out:find("spinner preempted 20 times", 1, true) and out:find("status=0", 1, true), out)
print("preempt ok")
