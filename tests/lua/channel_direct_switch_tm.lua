-- lutra-args: -w 2 --sync=tm
-- channel_direct_switch.lua with the runtime's structures synchronised by transactions.
dofile((arg and arg[0] or ""):match("^(.-)[^/]*$") .. "channel_direct_switch.lua")
