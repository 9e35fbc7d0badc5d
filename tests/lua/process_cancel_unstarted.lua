-- lutra-args: -w 1 --preempt 0
-- A process cancelled before its first slice never runs (on one worker without
-- preemption, the spawner runs on until it blocks): its join answers false,
-- "cancelled: reason", and its monitor is told.
local ran = lutra.channel(1)
local p = lutra.spawn(function(ran) ran:send("ran") end, ran)
lutra.monitor(p)
assert(p:cancel("before it ran") == true)
local ok, err = p:join()
assert(ok == false and err == "cancelled: before it ran", tostring(err))
assert(p:cancel_slices() == 1, p:cancel_slices())
local down = lutra.receive()
assert(down[1] == "down" and down[2] == p and down[3] == "cancelled" and down[4] == err)
local got = ran:try_receive()
assert(got == false, "the cancelled process ran")
print("ok")
