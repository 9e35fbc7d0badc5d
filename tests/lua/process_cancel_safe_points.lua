-- lutra-args: -w 2
-- p:cancel stops a process at its next safe point: blocked in each blocking call
-- (send, receive, mailbox receive, select, sleep, join, retry, luaproc's receive, a
-- blocking call inside a user coroutine), yielding, running a CPU-bound loop, or
-- looping inside lutra.atomic. Each stops within 3 time slices of the request
-- (counted by the runtime: p:cancel_slices()), its to-be-closed variable is closed,
-- p:join() answers false, "cancelled: reason", and the aborted transaction leaves
-- the shared table as it was. The test waits for each victim to be blocked (its
-- status says so) before cancelling it: no sleep orders anything.

local function until_waiting(p)
  while true do
    local status = p:status()
    if status == "waiting" then return end
    assert(status == "running", status)
    lutra.yield()
  end
end

local forever = lutra.channel() -- nobody sends or receives on it
local s = lutra.shared { n = 0, flag = 0 }
local sleeper = lutra.spawn(function(ch) ch:receive() end, forever)

local victims = {
  { "receive", true, function(report, ch)
      local _ <close> = setmetatable({}, { __close = function() report:send("closed") end })
      report:send("ready")
      ch:receive()
    end, forever },
  { "send", true, function(report, ch)
      local _ <close> = setmetatable({}, { __close = function() report:send("closed") end })
      report:send("ready")
      ch:send("never taken")
    end, lutra.channel() },
  { "mailbox receive", true, function(report)
      local _ <close> = setmetatable({}, { __close = function() report:send("closed") end })
      report:send("ready")
      lutra.receive()
    end },
  { "select", true, function(report, a)
      local _ <close> = setmetatable({}, { __close = function() report:send("closed") end })
      report:send("ready")
      lutra.select(a, lutra.channel())
    end, forever },
  { "sleep", true, function(report)
      local _ <close> = setmetatable({}, { __close = function() report:send("closed") end })
      report:send("ready")
      lutra.sleep(1e6)
    end },
  { "join", true, function(report, other)
      local _ <close> = setmetatable({}, { __close = function() report:send("closed") end })
      report:send("ready")
      other:join()
    end, sleeper },
  { "retry", true, function(report, s)
      local _ <close> = setmetatable({}, { __close = function() report:send("closed") end })
      report:send("ready")
      lutra.atomic(function() if s.flag == 0 then lutra.retry() end end)
    end, s },
  { "luaproc receive", true, function(report)
      local luaproc = require "luaproc"
      luaproc.newchannel("cancel-test")
      local _ <close> = setmetatable({}, { __close = function() report:send("closed") end })
      report:send("ready")
      luaproc.receive("cancel-test")
    end },
  { "user coroutine", true, function(report, ch)
      local _ <close> = setmetatable({}, { __close = function() report:send("closed") end })
      report:send("ready")
      coroutine.wrap(function() ch:receive() end)()
    end, forever },
  { "yield loop", false, function(report)
      local _ <close> = setmetatable({}, { __close = function() report:send("closed") end })
      report:send("ready")
      while true do lutra.yield() end
    end },
  { "CPU-bound loop", false, function(report)
      local _ <close> = setmetatable({}, { __close = function() report:send("closed") end })
      report:send("ready")
      local i = 0
      while true do i = i + 1 end
    end },
  { "atomic loop", false, function(report, s)
      local _ <close> = setmetatable({}, { __close = function() report:send("closed") end })
      report:send("ready")
      -- Lets the canceller, woken by "ready", run first: a loop inside atomic cannot
      -- be preempted, and the woken process may wait on this worker.
      lutra.yield()
      lutra.atomic(function()
        s.n = s.n + 1
        local i = 0
        while true do i = i + 1 end
      end)
    end, s },
}

for _, victim in ipairs(victims) do
  local name, blocks, f, arg = victim[1], victim[2], victim[3], victim[4]
  local report = lutra.channel(4)
  local p = lutra.spawn(f, report, arg)
  assert(report:receive() == "ready")
  if blocks then until_waiting(p) end
  assert(p:cancel(name) == true, name)
  local ok, err = p:join()
  assert(ok == false and err == "cancelled: " .. name, name .. ": " .. tostring(ok) .. " " .. tostring(err))
  assert(report:receive() == "closed", name .. ": to-be-closed variable not closed")
  local slices = p:cancel_slices()
  assert(slices <= 3, name .. " took " .. slices .. " slices to stop")
  local status, message = p:status()
  assert(status == "cancelled" and message == "cancelled: " .. name, status)
  assert(p:cancel("again") == false, "cancelling a finished process does nothing")
end

assert(s.n == 0, "the cancelled transaction left its write")
assert(sleeper:cancel() == true)
local ok, err = sleeper:join()
assert(ok == false and err == "cancelled", tostring(err))
print("ok")
