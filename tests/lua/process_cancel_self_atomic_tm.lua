-- lutra-args: --sync=tm
-- process_cancel_self_atomic.lua with the runtime's structures synchronised by
-- transactions.
dofile((arg and arg[0] or ""):match("^(.-)[^/]*$") .. "process_cancel_self_atomic.lua")
