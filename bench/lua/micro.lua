-- Seed 000's micro-benchmarks as processes: P processes each run N iterations of
-- While (`while i < n do i = i + 1 end`) or Iterator (a function called per
-- iteration, like Ruby's `n.times { }`). Embarrassingly parallel.
--   lutra micro.lua while|iterator P N      lua5.4 micro.lua while|iterator P N
if not lutra then dofile((arg and arg[0] or ""):match("^(.-)[^/]*$") .. "shim.lua") end

local kind, procs, n = ...
procs = math.tointeger(tonumber(procs)) or 1
n = math.tointeger(tonumber(n)) or 10000000

local function while_loop(n)
  local i = 0
  while i < n do i = i + 1 end
  return i
end

local function iterator(n)
  local function times(count, block)
    for i = 1, count do block(i) end
  end
  local last = 0
  times(n, function(i) last = i end)
  return last
end

local body = kind == "iterator" and iterator or while_loop
local ps = {}
for i = 1, procs do ps[i] = lutra.spawn(body, n) end
local total = 0
for i = 1, procs do total = total + ps[i]:join() end
assert(total == procs * n)
print(string.format("micro: ok %s %d x %d", kind, procs, n))
