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

-- a message arriving before the timeout is taken
lutra.spawn(function(ch) lutra.sleep(0.05) ch:send("late") end, ch)
local ok3, v = ch:try_receive(5)
assert(ok3 == true and v == "late")

-- a rendezvous sender waiting is a message ready for try_receive
local r = lutra.channel()
lutra.spawn(function(r) r:send("waiting") end, r)
local got
for _ = 1, 100 do
  local ok4, value = r:try_receive()
  if ok4 then got = value break end
  lutra.sleep(0.01)
end
assert(got == "waiting")

ch:close()
ok, why = ch:try_receive()
assert(ok == false and why == "closed")
ok, why = ch:try_receive(1)
assert(ok == false and why == "closed")
-- a timeout on a channel closed while waiting answers "closed"
local c2 = lutra.channel()
lutra.spawn(function(c) lutra.sleep(0.05) c:close() end, c2)
ok, why = c2:try_receive(5)
assert(ok == false and why == "closed", why)
print("ok")
