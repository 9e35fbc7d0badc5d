-- A process that cancels itself inside `lutra.atomic`: the cancel call cannot be
-- undone (others see the request), so it makes the transaction irrevocable first (an
-- attempt that read or wrote restarts irrevocable), then raises the cancellation at
-- the call, inside the transaction. Uncaught, the error leaves `lutra.atomic` as any
-- error does: the transaction is rolled back (shared tables keep no trace of it) and
-- the error goes on up; the process ends cancelled, so `p:join()` returns `false,
-- "cancelled: reason"` and monitors report "cancelled".
local s = lutra.shared { n = 0, log = 0 }
local report = lutra.channel(8)

-- Uncaught: nothing of the transaction stays.
local p = lutra.spawn(function(s)
  lutra.atomic(function()
    s.n = s.n + 1
    s.log = s.log + 1
    lutra.self():cancel("x")
    s.n = 100
  end)
  error("not reached")
end, s)
lutra.monitor(p)
local ok, err = p:join()
assert(ok == false and err == "cancelled: x", tostring(err))
assert(s.n == 0 and s.log == 0, "the aborted transaction left a trace")
local down = lutra.receive()
assert(down[1] == "down" and down[2] == p and down[3] == "cancelled" and down[4] == "cancelled: x",
  tostring(down[3]))
assert(p:status() == "cancelled")

-- Caught around `lutra.atomic`: the error names the cancel call's line, the process
-- sees the shared table unchanged, and it still ends cancelled.
p = lutra.spawn(function(s, report)
  local caught_ok, caught = pcall(lutra.atomic, function()
    s.n = 5
    lutra.self():cancel("y")
    s.n = 6
  end)
  report:send(caught_ok, caught, s.n)
  return "went on"
end, s, report)
local caught_ok, caught, seen = report:receive()
assert(caught_ok == false, tostring(caught))
assert(caught:find("^.-process_cancel_self_atomic%.lua:%d+: cancelled: y$"), caught)
assert(seen == 0, tostring(seen))
ok, err = p:join()
assert(ok == false and err == "cancelled: y", tostring(err))
assert(s.n == 0)

-- Caught inside the transaction: it is irrevocable by then, so it goes on to commit
-- (as an irrevocable transaction that another process cancels does); the process
-- still ends cancelled at its end.
p = lutra.spawn(function(s, report)
  local inner_ok = lutra.atomic(function()
    s.n = 7
    local inner_ok = pcall(lutra.self().cancel, lutra.self(), "z")
    s.n = 8
    return inner_ok
  end)
  report:send(inner_ok)
end, s, report)
assert(report:receive() == false)
ok, err = p:join()
assert(ok == false and err == "cancelled: z", tostring(err))
assert(s.n == 8, tostring(s.n))
print("ok")
-- expect-stdout: ok
