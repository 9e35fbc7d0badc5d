-- try_receive([timeout]): `true, ...` with a message, or `false, "empty"` (no
-- timeout), `false, "timeout"`, `false, "closed"`.
local ch = lutra.channel(4)
local ok, why = ch:try_receive()
assert(ok == false and why == "empty")

ch:send(1, "one")
local ok2, a, b = ch:try_receive()
assert(ok2 == true and a == 1 and b == "one")

ok, why = ch:try_receive(0.1)
assert(ok == false and why == "timeout")

-- A message arriving during a try_receive's wait, a channel closed during it, and a
-- waiting rendezvous sender taken by try_receive are in
-- crates/lutra-lua/tests/blocking.rs: each needs the other side provably waiting.

ch:close()
ok, why = ch:try_receive()
assert(ok == false and why == "closed")
ok, why = ch:try_receive(1)
assert(ok == false and why == "closed")
print("ok")
