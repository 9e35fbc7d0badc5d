-- lutra.monitor(p): the monitoring process receives {"down", p, status,
-- value_or_error...} in its mailbox once p has ended, exactly once per monitor, for
-- each way of ending (returned, failed, cancelled); several monitors (two calls by
-- one process, one by another); a dead process is reported at once. "Exactly once":
-- after the expected notices, the mailbox is empty.

local function no_more()
  local nothing, why = lutra.receive(0)
  assert(nothing == nil and why == "timeout", "an extra message: " .. tostring(nothing))
end

local gate = lutra.channel()
local endings = {
  returned = function(gate) gate:receive() return "result", { 7 } end,
  failed = function(gate) gate:receive() error("it broke", 0) end,
  cancelled = function(gate) gate:receive() end,
}

for _, how in ipairs({ "returned", "failed", "cancelled" }) do
  local p = lutra.spawn(endings[how], gate)
  assert(lutra.monitor(p) == p)
  lutra.monitor(p)
  -- A third monitor, in another process, reports what it received to us.
  local watcher_ready = lutra.channel()
  local watcher = lutra.spawn(function(p, ready)
    lutra.monitor(p)
    ready:send("watching")
    local down = lutra.receive()
    local extra = lutra.receive(0)
    return down[1], down[2] == p, down[3], extra
  end, p, watcher_ready)
  assert(watcher_ready:receive() == "watching")
  if how == "cancelled" then p:cancel("stop") else gate:send("go") end
  for _ = 1, 2 do
    local down = lutra.receive()
    assert(down[1] == "down" and down[2] == p and down[3] == how, how .. ": " .. tostring(down[3]))
    if how == "returned" then
      assert(down[4] == "result" and down[5][1] == 7)
    elseif how == "failed" then
      assert(down[4]:find("it broke", 1, true), down[4])
    else
      assert(down[4] == "cancelled: stop", down[4])
    end
  end
  no_more()
  local tag, same, status, extra = watcher:join()
  assert(tag == "down" and same and status == how and extra == nil, how)
  -- Monitoring it now that it has ended: told at once, once.
  lutra.monitor(p)
  local down = lutra.receive(0)
  assert(down and down[3] == how, how .. " (dead process)")
  no_more()
end
print("ok")
