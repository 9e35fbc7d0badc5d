-- expect-stdout: ok
-- `require "lutra"` from a stock lua5.4: processes run on the module's workers; the
-- host's main thread is not a task, so blocking calls park the OS thread.
local lutra = require "lutra"
assert(package.loaded.lutra == lutra)
assert(print == print and lutra.spawn, "the host's globals are left alone")
assert(rawget(_G, "lutra") == nil, "require returns the table; no global is set")

-- spawn and join
local p = lutra.spawn(function(a, b) return a + b, a * b end, 6, 7)
local s, m = p:join()
assert(s == 13 and m == 42)

-- channels: rendezvous, values, close
local ch = lutra.channel()
lutra.spawn(function(ch)
  for i = 1, 100 do ch:send(i) end
  ch:close()
end, ch)
local sum = 0
for v in ch:values() do sum = sum + v end
assert(sum == 5050)
local ok, err = pcall(ch.receive, ch)
assert(not ok and err:find("closed"), err)

-- try_receive and select with timeouts, from the host
local a, b = lutra.channel(1), lutra.channel(1)
assert(select(2, a:try_receive()) == "empty")
assert(select(2, a:try_receive(0.05)) == "timeout")
assert(lutra.select(a, b, 0.05) == nil)
lutra.spawn(function(b) b:send("b!") end, b)
local from, v = lutra.select(a, b)
assert(from == b and v == "b!")

-- the host has a mailbox
local me = lutra.self()
lutra.spawn(function(host) host:send("to host", 1) end, me)
local what, n = lutra.receive(5)
assert(what == "to host" and n == 1)
assert(lutra.receive(0.05) == nil)

-- work on several processes at once
local results = lutra.channel(8)
for i = 1, 8 do
  lutra.spawn(function(i, out)
    local x = 0
    for k = 1, 200000 do x = x + k % i end
    out:send(i, x)
  end, i, results)
end
local got = 0
for _ = 1, 8 do results:receive() got = got + 1 end
assert(got == 8)

lutra.wait()
print("ok")
