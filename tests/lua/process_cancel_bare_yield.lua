-- A bare `coroutine.yield()` at the top of a process (no user coroutine around it)
-- yields to the scheduler, as `lutra.yield` does: it is a safe point, so a cancelled
-- process raises `cancelled: reason` there (catchable, at the caller's line) rather
-- than getting a value back.
local report = lutra.channel(4)
local p = lutra.spawn(function(report)
  report:send("yielding")
  local ok, err = pcall(function()
    while true do
      local got = coroutine.yield()
      if got ~= nil then return "coroutine.yield returned " .. tostring(got) end
    end
  end)
  report:send(ok, err)
end, report)
assert(report:receive() == "yielding")
assert(p:cancel("stop"))
local caught_ok, caught = report:receive()
assert(caught_ok == false, tostring(caught))
assert(caught:find("^.-process_cancel_bare_yield%.lua:%d+: cancelled: stop$"), caught)
local ok, err = p:join()
assert(ok == false and err == "cancelled: stop", tostring(err))

-- Uncaught, it ends the process cancelled; values yielded with it are ignored.
p = lutra.spawn(function(report)
  report:send("yielding")
  while true do coroutine.yield(1, 2, 3) end
end, report)
assert(report:receive() == "yielding")
assert(p:cancel("again"))
ok, err = p:join()
assert(ok == false and err == "cancelled: again", tostring(err))

-- Without a cancellation a bare yield returns nothing, and a user's own coroutines
-- keep the stock yield's contract.
p = lutra.spawn(function()
  local values = table.pack(coroutine.yield())
  local gen = coroutine.wrap(function(a)
    local b = coroutine.yield(a + 1)
    return b * 2
  end)
  return values.n, gen(1), gen(5)
end)
local n, first, second = p:join()
assert(n == 0 and first == 2 and second == 10, tostring(n))
print("ok")
-- expect-stdout: ok
