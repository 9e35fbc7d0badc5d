-- lutra-args: -w 1
-- A cancelled CPU-bound process is interrupted once: its cleanup (a to-be-closed
-- variable's __close and a pcall's handler) runs to its end even when preemption
-- pauses it, here at least twice each (counted by p:cancel_slices(), not timed),
-- and the process still ends cancelled.
local report = lutra.channel(8)
local p = lutra.spawn(function(report)
  local me = lutra.self()
  -- Runs until it has been preempted `times` more times since it started.
  local function compute_through_preemptions(times)
    local from = me:cancel_slices()
    local i = 0
    while me:cancel_slices() < from + times do i = i + 1 end
    return i
  end
  local ok, err = pcall(function()
    local _ <close> = setmetatable({}, { __close = function()
      compute_through_preemptions(2)
      report:send("closed")
    end })
    report:send("ready")
    local i = 0
    while true do i = i + 1 end
  end)
  compute_through_preemptions(2)
  report:send("caught", ok, err)
end, report)

assert(report:receive() == "ready")
assert(p:cancel("stop") == true)
local ok, err = p:join()
assert(ok == false and err == "cancelled: stop", tostring(err))
assert(report:receive() == "closed", "the __close handler was cut short")
local what, caught_ok, caught = report:receive()
assert(what == "caught" and caught_ok == false and caught:find("cancelled: stop", 1, true), tostring(caught))
assert(p:cancel_slices() >= 5, "cleanup was not preempted: " .. p:cancel_slices())
print("ok")
