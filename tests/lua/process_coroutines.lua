-- User coroutines inside a process keep working and never swallow the scheduler's
-- yields: generators that block on channels, in coroutine.wrap and coroutine.resume,
-- nested two deep. Where yielding is impossible, the call says so.
local ch = lutra.channel()
lutra.spawn(function(ch) for i = 1, 10 do ch:send(i) end ch:close() end, ch)

-- two levels of coroutine.wrap; the inner one blocks on the channel
local outer = coroutine.wrap(function()
  local inner = coroutine.wrap(function()
    for v in ch:values() do coroutine.yield(v) end
    return nil
  end)
  while true do
    local v = inner()
    if v == nil then return nil end
    coroutine.yield(v * 2)
  end
end)
local sum = 0
for v in outer do sum = sum + v end
assert(sum == 110, sum)

-- coroutine.resume / coroutine.status, two deep, blocking on a rendezvous channel
local ch2 = lutra.channel()
lutra.spawn(function(ch2) for i = 1, 5 do ch2:send("m" .. i) end end, ch2)
local co_outer = coroutine.create(function()
  local co_inner = coroutine.create(function()
    for _ = 1, 5 do coroutine.yield(ch2:receive()) end
    return "inner done"
  end)
  while true do
    local ok, v = coroutine.resume(co_inner)
    assert(ok, v)
    if coroutine.status(co_inner) == "dead" then return v end
    assert(coroutine.isyieldable())
    coroutine.yield("outer:" .. v)
  end
end)
local got = {}
while true do
  local ok, v = coroutine.resume(co_outer)
  assert(ok, v)
  got[#got + 1] = v
  if coroutine.status(co_outer) == "dead" then break end
end
assert(#got == 6 and got[1] == "outer:m1" and got[5] == "outer:m5" and got[6] == "inner done")

-- a generator that sleeps (a timer wake-up) inside a coroutine
local sleeper = coroutine.wrap(function() lutra.sleep(0.01) coroutine.yield("slept") return "end" end)
assert(sleeper() == "slept" and sleeper() == "end")

-- errors inside coroutines are the coroutine's
local bad = coroutine.create(function() ch:receive() end)
local ok, err = coroutine.resume(bad)
assert(not ok and err:find("closed"), err)
assert(coroutine.status(bad) == "dead")

-- where yielding is impossible: a blocking call in a table.sort comparator
local never = lutra.channel()
ok, err = pcall(table.sort, { 3, 1, 2 }, function(a, b) never:receive() return a < b end)
assert(not ok and err:find("cannot block") and err:find("C function"), err)
-- ... or in a string.gsub callback
ok, err = pcall(string.gsub, "abc", "%w", function() lutra.sleep(0.01) end)
assert(not ok and err:find("cannot block"), err)
-- ... or in a coroutine resumed from such a callback
local gen = coroutine.wrap(function() never:receive() end)
ok, err = pcall(table.sort, { 2, 1 }, function(a, b) gen() return a < b end)
assert(not ok and err:find("cannot block") and err:find("resumed from a C function"), err)
-- a comparator that does not block works
local t = {}
for i = 1, 2000 do t[i] = (i * 7919) % 2000 end
table.sort(t, function(a, b) return a < b end)
for i = 2, #t do assert(t[i - 1] <= t[i]) end
print("process_coroutines ok")
