-- Timeouts far beyond any clock (1e300 s, math.huge) wait as long as they must and
-- leave the timer working for every other process (a 1e300 s
-- timeout killed the timer thread, and every later sleep hung).
local ch = lutra.channel()
local waiter = lutra.spawn(function(ch)
  local from, a = lutra.select(ch, 1e300)
  assert(from == ch)
  local ok, b = ch:try_receive(1e300)
  local c = lutra.receive(math.huge)
  return a, b, c
end, ch)
lutra.sleep(0.01)
ch:send("first")
lutra.sleep(0.01)          -- the timer still fires
ch:send("second")
waiter:send("third")
local a, b, c = waiter:join()
assert(a == "first" and b == "second" and c == "third", tostring(a) .. tostring(b) .. tostring(c))
-- A bounded timeout still times out.
assert(ch:try_receive(0.01) == false)
