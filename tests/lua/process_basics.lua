-- Processes: spawn with arguments, join results, isolation, errors carried by join.
assert(require("lutra") == lutra, "require 'lutra' returns the preloaded table")

local p = lutra.spawn(function(a, b) return a + b, a * b end, 6, 7)
local sum, product = p:join()
assert(sum == 13 and product == 42)

-- a source string works as well
assert(lutra.spawn("return ... + 1", 41):join() == 42)

-- globals are per process
shared_global = "main"
local q = lutra.spawn(function() return shared_global end)
assert(q:join() == nil, "a new process does not see the spawner's globals")

-- capturing a local is refused, naming the variable
local secret = 5
local ok, err = pcall(lutra.spawn, function() return secret end)
assert(not ok and err:find("'secret'") and err:find("argument"), err)

-- a failing process reports its message and traceback through join
local bad = lutra.spawn(function() error("boom") end)
local ok2, err2 = pcall(bad.join, bad)
assert(not ok2 and err2:find("boom") and err2:find("traceback"), err2)

-- many processes, many more than workers
local ps = {}
for i = 1, 200 do ps[i] = lutra.spawn(function(i) return i * i end, i) end
local total = 0
for i = 1, 200 do total = total + ps[i]:join() end
assert(total == 2686700)
print("ok")
