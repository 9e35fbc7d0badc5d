-- lutra-args: --stats
-- expect-stderr: processes spawned  3
-- expect-stderr: messages sent      4
-- expect-stderr: messages received  4
-- --stats prints the runtime's counters at exit (on standard error).
local p = lutra.spawn(function() lutra.receive() lutra.receive() end)
p:send(1)
p:send(2)
local ch = lutra.channel()
lutra.spawn(function(ch) ch:send("a") ch:send("b") end, ch)
ch:receive()
ch:receive()
