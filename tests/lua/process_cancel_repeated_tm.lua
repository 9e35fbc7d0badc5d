-- lutra-args: -w 2 --sync=tm
-- process_cancel_repeated.lua with the runtime's structures synchronised by
-- transactions.
dofile((arg and arg[0] or ""):match("^(.-)[^/]*$") .. "process_cancel_repeated.lua")
