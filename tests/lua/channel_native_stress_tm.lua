-- lutra-args: -w 2 --sync=tm
-- channel_native_stress.lua with the runtime's structures synchronised by transactions.
dofile((arg and arg[0] or ""):match("^(.-)[^/]*$") .. "channel_native_stress.lua")
