-- lutra-args: -w 1
-- process_cancel_safe_points.lua on one worker (the canceller and its victim take
-- turns on it).
dofile((arg and arg[0] or ""):match("^(.-)[^/]*$") .. "process_cancel_safe_points.lua")
