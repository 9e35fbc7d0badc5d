-- expect-exit: 2
-- expect-once: deadlock: every process is blocked
-- A host whose blocking call meets a deadlock gets the report in its error (which
-- lua5.4 prints); at the end the same report is not printed again, and the
-- interpreter exits with lutra's deadlock status, 2.
local lutra = require "lutra"
local ch = lutra.channel()
lutra.spawn(function(ch) ch:receive() end, ch)
ch:receive()
