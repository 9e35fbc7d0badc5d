-- expect-exit: 2
-- expect-once: deadlock: every process is blocked
-- The script ends while a process waits for good: the end reports the deadlock
-- once and exits with status 2 instead of 0.
local lutra = require "lutra"
local ch = lutra.channel()
lutra.spawn(function(ch) ch:receive() end, ch)
print("script ends")
