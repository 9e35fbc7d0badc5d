-- lutra-args: -w 2 --sync=tm
-- process_link.lua and process_monitor.lua with the runtime's structures
-- synchronised by transactions.
local dir = (arg and arg[0] or ""):match("^(.-)[^/]*$")
dofile(dir .. "process_link.lua")
dofile(dir .. "process_monitor.lua")
