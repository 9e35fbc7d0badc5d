-- A process cancelled while a native blocking call parks its main coroutine in a
-- slice after its first (the call's frame left in place, `PARKED_IN_PLACE`): the
-- call sees the cancellation it is resumed with and raises, whichever call it is
-- (`ch:receive`, `ch:send`, `luaproc.receive`), and a caught cancellation lets the
-- process go on to its next blocking call, which raises again.
local luaproc = require "luaproc"
assert(luaproc.newchannel("in place"))

-- A process whose first slice parks on `go`, and whose `body(ch, extra)` then waits
-- on what its status names `waits_on`, once it does.
local function parked_in_place(body, waits_on, extra)
  local go, ch = lutra.channel(), lutra.channel()
  local p = lutra.spawn(function(go, ch, body, extra)
    go:receive()
    body(ch, extra)
    error("not reached")
  end, go, ch, body, extra)
  go:send(true)
  waits_on = waits_on or tostring(ch)
  repeat
    lutra.yield()
    local status, what = p:status()
  until status == "waiting" and what:find(waits_on, 1, true)
  return p
end

for what, case in pairs({
  receive = { function(ch) ch:receive() end },
  send = { function(ch) ch:send("never taken") end },
  luaproc = { function() require("luaproc").receive("in place") end, "in place" },
}) do
  local p = parked_in_place(case[1], case[2])
  assert(p:cancel(what) == true, what)
  local ok, err = p:join()
  assert(ok == false and err == "cancelled: " .. what, what .. ": " .. tostring(err))
end

-- Caught: the call raised, and the next blocking call raises again.
local report = lutra.channel(4)
local p = parked_in_place(function(ch, report)
  local ok, err = pcall(ch.receive, ch)
  report:send(ok, err)
  local again_ok, again = pcall(ch.receive, ch)
  report:send(again_ok, again)
  return "went on"
end, nil, report)
assert(p:cancel("caught"))
local ok, err = report:receive()
assert(ok == false and err:find("cancelled: caught", 1, true), tostring(err))
ok, err = report:receive()
assert(ok == false and err:find("cancelled: caught", 1, true), tostring(err))
assert(select(2, p:join()) == "cancelled: caught")
print("ok")
