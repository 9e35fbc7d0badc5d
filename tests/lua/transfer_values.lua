-- What crosses between processes: scalars (integers and floats kept distinct),
-- binary strings, tables deep-copied with cycles and shared sub-tables, channels,
-- process handles, frozen values and isolated functions.
local ch = lutra.channel(16)

-- Sends `...` to a fresh process and gets back what it received, by `join`.
local function echo(...)
  return lutra.spawn(function(...) return ... end, ...):join()
end

-- scalars
local a, b, c, d, e, f = echo(nil, true, false, 3, 3.0, -0.5)
assert(a == nil and b == true and c == false)
assert(math.type(d) == "integer" and d == 3)
assert(math.type(e) == "float" and e == 3.0)
assert(e == -(-3.0) and f == -0.5)
assert(math.type(echo(math.maxinteger)) == "integer" and echo(math.maxinteger) == math.maxinteger)
assert(echo(1 / 0) == math.huge)
local nan = echo(0 / 0)
assert(nan ~= nan, "NaN stays NaN")
-- the count of values, trailing nils included
assert(select("#", echo(1, nil, nil)) == 3)

-- binary-safe strings
local binary = "a\0b\255\r\n" .. string.rep("\0", 1000)
assert(echo(binary) == binary)
assert(echo("") == "")

-- tables: deep copy, cycles and shared sub-tables preserved
local shared = { "shared" }
local t = { list = { 1, 2, 3 }, left = shared, right = shared, [2.5] = "float key", [true] = "bool key" }
t.self = t
t.list.back = t
local u = echo(t)
assert(u ~= t, "a copy, not the same table")
assert(u.self == u, "cycle preserved")
assert(u.list.back == u, "deep cycle preserved")
assert(u.left == u.right and u.left[1] == "shared", "shared sub-table preserved")
assert(u[2.5] == "float key" and u[true] == "bool key")
assert(#u.list == 3 and math.type(u.list[1]) == "integer")
-- a table as a key
local k = { "key" }
local keyed = echo({ [k] = "v", k })
local key_copy = keyed[1]
assert(keyed[key_copy] == "v", "a table key is the same copied table as the value")
-- two values of one message share their tables
local x, y = echo(shared, { shared })
assert(y[1] == x)
-- metatables are not carried: raw contents only
local with_meta = setmetatable({ raw = 1 }, { __index = function() return "meta" end })
local copied = echo(with_meta)
assert(getmetatable(copied) == nil and copied.raw == 1 and copied.other == nil)
-- the copy is independent: the sender's changes do not reach it
local original = { n = 1 }
ch:send(original)
original.n = 2
assert(ch:receive().n == 1)

-- channels and process handles cross by reference
local other = lutra.channel(1)
local got = echo(other)
assert(got == other and rawequal(got, other), "the same channel handle")
lutra.spawn(function(c) c:send("through the copied handle") end, other)
assert(other:receive() == "through the copied handle")
local me = lutra.self()
assert(echo(me) == me)
local worker = lutra.spawn(function() return lutra.receive() end)
lutra.spawn(function(w) w:send("mail") end, worker)
assert(worker:join() == "mail")

-- frozen values cross by reference (see transfer_freeze.lua)
local frozen = lutra.freeze({ 1, 2 })
assert(echo(frozen) == frozen)

-- isolated functions: no upvalues; only _ENV; _ENV not first; local recursion
local function no_upvalues(n) return n + 1 end
assert(echo(no_upvalues)(1) == 2)
local function uses_globals(s) return string.upper(s) end
assert(echo(uses_globals)("a") == "A")
local function fact(n) if n <= 1 then return 1 end return n * fact(n - 1) end
assert(lutra.spawn(fact, 10):join() == 3628800, "local recursion: the upvalue is the function itself")
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) + math.abs(0) end
assert(lutra.spawn(fib, 15):join() == 610, "self first, _ENV second")
-- recursion through a global: the global must exist in the receiving process
function gfib(n) if n < 2 then return n end return gfib(n - 1) + gfib(n - 2) end
local missing = lutra.spawn(gfib, 5)
local ok, err = pcall(missing.join, missing)
assert(not ok and err:find("global 'gfib'"), err)
assert(lutra.spawn(function(f, n) gfib = f return gfib(n) end, gfib, 10):join() == 55)
-- a local alias of the globals table counts as the globals
local G = _G
assert(echo(function() return G.type(1) end)() == "number")
assert(echo(function() return G.type(1) .. type(2) end)() == "numbernumber", "two upvalues bound to the globals")
-- functions inside tables; the same function twice is one function on arrival
local handlers = { on = no_upvalues }
handlers.again = no_upvalues
local hs = echo(handlers)
assert(hs.on == hs.again and hs.on(41) == 42)
-- a function from a source string
assert(echo(load("return 7"))() == 7)
print("transfer_values ok")
