-- expect-sequence: boom at once
-- expect-sequence: after the failure
-- expect-once: boom at once
-- A process that fails while nobody joins it has its error printed at once, as
-- luaproc does, not when the interpreter ends.
local lutra = require "lutra"
lutra.spawn(function() error("boom at once") end)
lutra.wait()
print("after the failure")
