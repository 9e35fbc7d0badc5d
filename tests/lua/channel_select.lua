-- lutra.select(ch1, ch2, ...[, timeout]): `ch, ...` for a ready channel; closed
-- channels are skipped; "closed" is raised when all are closed; nil on timeout.
local a, b = lutra.channel(4), lutra.channel(4)
b:send("from b", 2)
local ch, v, n = lutra.select(a, b)
assert(ch == b and v == "from b" and n == 2)

-- timeout
assert(lutra.select(a, b, 0.05) == nil)

-- A select that blocks until a channel becomes ready, and one woken when its last
-- channel closes, are in crates/lutra-lua/tests/blocking.rs: the message (or the
-- close) must come once the select provably waits, which a script cannot observe.

-- closed channels are skipped
a:close()
b:send("still b")
ch, v = lutra.select(a, b, 1)
assert(ch == b and v == "still b")
-- a closed channel with messages left is still drained through select
local c = lutra.channel(2)
c:send("left")
c:close()
ch, v = lutra.select(a, c)
assert(ch == c and v == "left")
-- all closed: raises
b:close()
local ok, err = pcall(lutra.select, a, b, c)
assert(not ok and err:find("closed"), err)
ok, err = pcall(lutra.select, a, b, 0.1)
assert(not ok and err:find("closed"), err)

-- misuse
ok, err = pcall(lutra.select, a, "nope")
assert(not ok and err:find("bad argument #2 to 'select'"), err)
print("ok")
