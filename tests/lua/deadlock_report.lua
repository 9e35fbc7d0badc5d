-- expect-exit: 2
-- expect-stderr: deadlock
-- expect-stderr: waits on receive on channel
local ch = lutra.channel()
lutra.spawn(function(ch) ch:receive() end, ch)
ch:receive()
