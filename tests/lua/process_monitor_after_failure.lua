-- expect-stdout: told of the failure
-- A process that failed before anyone monitored it, then monitored: the monitor is
-- told at once, and that attends to the failure as a join would, so the program ends
-- with status 0 (a supervisor that spawns, then monitors, must not turn a fast
-- worker's failure into a failed run).
local p = lutra.spawn(function() error("failed before the monitor", 0) end)
-- Waits until it has ended, without joining it.
while p:status() ~= "failed" do lutra.yield() end
lutra.monitor(p)
local down = lutra.receive()
assert(down[1] == "down" and down[2] == p and down[3] == "failed", tostring(down[3]))
assert(down[4]:find("failed before the monitor", 1, true), down[4])
print("told of the failure")
