-- lutra-args: -w 2
-- lutra.now() is a monotonic clock in seconds; lutra.workers() is the worker count.
assert(lutra.workers() == 2, "lutra -w 2 runs two workers")
local t0 = lutra.now()
assert(math.type(t0) == "float")
lutra.sleep(0.05)
local elapsed = lutra.now() - t0
assert(elapsed >= 0.05 and elapsed < 5, elapsed)
-- the same clock and count inside a spawned process
local p = lutra.spawn(function() return lutra.workers(), lutra.now() end)
local workers, t1 = p:join()
assert(workers == 2 and t1 >= t0)
