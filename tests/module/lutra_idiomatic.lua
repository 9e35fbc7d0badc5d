-- expect-stdout: idiomatic ok
-- The usual way to write a module program works: a
-- process function may mention the `lutra` local (it is rebound to the process's own
-- lutra, as _ENV is), and clearing package.loaded.lutra then requiring again gives
-- the same table back.
local lutra = require "lutra"

local ch = lutra.channel()
local worker = lutra.spawn(function(ch)
  local sum = 0
  for v in ch:values() do sum = sum + v end
  return sum, lutra.workers() >= 1
end, ch)
for i = 1, 4 do ch:send(i) end
ch:close()
local sum, saw_lutra = worker:join()
assert(sum == 10 and saw_lutra == true, tostring(sum))

-- A process of a process: the rebinding goes on.
local outer = lutra.spawn(function()
  local inner = lutra.spawn(function() return lutra.self():id() end)
  return inner:join()
end)
assert(math.type(outer:join()) == "integer")

package.loaded.lutra = nil
local again = require "lutra"
assert(again == lutra, "require after clearing package.loaded gave another table")
package.loaded.lutra = nil
assert(require("lutra").spawn == lutra.spawn)
-- Inside a process too.
local p = lutra.spawn(function()
  package.loaded.lutra = nil
  return require("lutra") == lutra
end)
assert(p:join() == true)
print("idiomatic ok")
