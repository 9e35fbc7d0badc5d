-- lutra-args: -w 2
-- Cancelling a CPU-bound process, or one looping inside lutra.atomic, stops it
-- wherever the request lands (before, at or after its preemption, inside or
-- outside the transaction), many times over: each ends cancelled, its cleanup runs
-- in full (the __close handler's message arrives), and the aborted transaction
-- leaves no write. Whatever the interleaving, these must hold.
local s = lutra.shared { n = 0 }
local ROUNDS = 40

local function cpu_victim(report)
  local _ <close> = setmetatable({}, { __close = function() report:send("closed") end })
  report:send("ready")
  local i = 0
  while true do i = i + 1 end
end

local function atomic_victim(report, s)
  local _ <close> = setmetatable({}, { __close = function() report:send("closed") end })
  report:send("ready")
  -- The canceller, woken by "ready", may wait on this worker: a loop inside atomic
  -- cannot be preempted, so let it run once first.
  lutra.yield()
  lutra.atomic(function()
    s.n = s.n + 1
    local i = 0
    while true do i = i + 1 end
  end)
end

for round = 1, ROUNDS do
  for _, victim in ipairs { cpu_victim, atomic_victim } do
    local report = lutra.channel(4)
    local p = lutra.spawn(victim, report, s)
    assert(report:receive() == "ready")
    -- (Only the CPU-bound victim can be preempted: yielding here while the other
    -- loops inside atomic could leave this process queued behind it.)
    if victim == cpu_victim then
      for _ = 1, round % 3 do lutra.yield() end
    end
    assert(p:cancel("r" .. round) == true)
    local ok, err = p:join()
    assert(ok == false and err == "cancelled: r" .. round, tostring(err))
    assert(report:receive() == "closed", "round " .. round .. ": cleanup cut short")
  end
end
assert(s.n == 0, "a cancelled transaction left its write")
print("ok")
