-- Seed 001, experiment 1: W workers and a single long-running process (a long
-- loop); the runner measures elapsed time and the CPU time of the whole program
-- (idle workers and the waiting main process should use none).
--   lutra -w W long.lua [iterations]      lua5.4 long.lua [iterations]
if not lutra then dofile((arg and arg[0] or ""):match("^(.-)[^/]*$") .. "shim.lua") end

local iterations = math.tointeger(tonumber((...))) or 100000000

local p = lutra.spawn(function(n)
  local s = 0
  for i = 1, n do s = s + (i & 7) end
  return s
end, iterations)
local s = p:join()
assert(s == (iterations // 8) * 28 + ({ [0] = 0, 1, 3, 6, 10, 15, 21, 28 })[iterations % 8])
print("long: ok " .. s)
