-- expect-exit: 2
-- expect-stderr: process#1 (main_named_by_script.lua) waits on receive
-- Reports name the main process by its script, though the `lutra` program runs the
-- script through a driver chunk of its own.
local ch = lutra.channel()
ch:receive()
