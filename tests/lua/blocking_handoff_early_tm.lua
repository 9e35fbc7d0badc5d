-- lutra-args: -w 1 --preempt 10000 --sync tm
-- blocking_handoff_early.lua with the runtime's structures synchronised by
-- transactions.
local dir = (arg and arg[0] or ""):match("^(.-)[^/]*$")
dofile(dir .. "blocking_handoff_early.lua")
