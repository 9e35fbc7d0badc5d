-- luaproc.setnumworkers refuses more workers than lutra can create (the CLI's limit),
-- instead of starting thousands of threads.
local luaproc = require "luaproc"
local before = luaproc.getnumworkers()
local ok, err = pcall(luaproc.setnumworkers, 65535)
assert(not ok and err:find("bad argument #1 to 'setnumworkers' (at most 1024 workers)", 1, true), err)
assert(luaproc.getnumworkers() == before)
print("ok")
