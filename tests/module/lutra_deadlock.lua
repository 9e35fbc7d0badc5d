-- A host that would wait forever gets an error saying so, instead of hanging.
local lutra = require "lutra"
local ch = lutra.channel()
local p = lutra.spawn(function(ch) return pcall(ch.receive, ch) end, ch)
local ok, err = pcall(ch.receive, ch)
assert(not ok and err:find("deadlock"), err)
ch:close()
assert(p:join() == false)
print("ok")
