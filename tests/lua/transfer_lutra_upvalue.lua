-- A process function may capture the `lutra` table as an upvalue (`local lutra =
-- require "lutra"`, the idiomatic module style): it is rebound to the receiving
-- process's own lutra, as _ENV is. Other captured locals are
-- still refused, naming the variable.
local lutra = require "lutra"
local p = lutra.spawn(function(n)
  local child = lutra.spawn(function(m) return m + 1 end, n)
  return child:join(), lutra.self():id()
end, 41)
local answer, id = p:join()
assert(answer == 42 and id == p:id())

package.loaded.lutra = nil
assert(require "lutra" == lutra, "require after clearing package.loaded.lutra")

local secret = {}
local ok, err = pcall(lutra.spawn, function() return secret end)
assert(not ok and err:find("captures the local 'secret'", 1, true), err)
