-- lutra-args: -w 1 --sync tm
-- blocking_handoff.lua with the runtime's structures synchronised by transactions.
local dir = (arg and arg[0] or ""):match("^(.-)[^/]*$")
dofile(dir .. "blocking_handoff.lua")
