#!/usr/bin/env lutra
-- A script may start with a #! line, as under lua5.4; line
-- numbers stay those of the file.
assert(debug.getinfo(1, "l").currentline == 4)
local p = lutra.spawn(function() return 1 end)
assert(p:join() == 1)
