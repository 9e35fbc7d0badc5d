-- p:join(timeout) answers nil, "timeout" when p has not finished in time and leaves
-- it running: a later join still gets its results (or its failure).
local ch = lutra.channel()
local p = lutra.spawn(function(ch) return ch:receive() * 2 end, ch)
local a, b = p:join(0)
assert(a == nil and b == "timeout", tostring(b))
a, b = p:join(0.01)
assert(a == nil and b == "timeout", tostring(b))
assert(p:status() ~= "returned")
ch:send(21)
assert(p:join(1e9) == 42)
assert(p:join(0) == 42, "a finished process answers at once")

-- A failure raises as without a timeout.
local f = lutra.spawn(function(ch) ch:receive() error("late failure", 0) end, ch)
assert(select(2, f:join(0)) == "timeout")
ch:send(1)
local ok, err = pcall(f.join, f, 1e9)
assert(not ok and err:find("late failure"), err)

-- A joiner that times out again and again leaves nothing behind that stops the
-- joined process from finishing normally.
local q = lutra.spawn(function(ch) return ch:receive() end, ch)
for _ = 1, 100 do assert(q:join(0) == nil) end
ch:send("done")
assert(q:join() == "done")

-- Bad timeouts.
local bad_ok, bad = pcall(p.join, p, "soon")
assert(not bad_ok and bad:find("bad argument #1 to 'join' (number expected, got string)", 1, true), bad)
print("ok")
