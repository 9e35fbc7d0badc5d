-- expect-stdout: ok
-- Cancellation, join with a timeout, monitors and links from a stock lua5.4 that
-- loaded the module: the host's main thread is not a task, but it cancels (a process
-- blocked in each blocking call, or looping), joins, monitors (its mailbox gets the
-- notices, one per monitor for each way of ending) and is cancelled through a link.
local lutra = require "lutra"

local function until_waiting(p)
  while p:status() ~= "waiting" do end -- the workers run p meanwhile
end

-- A process blocked in a receive, and one in a CPU-bound loop.
local ch = lutra.channel()
local report = lutra.channel(4)
local blocked = lutra.spawn(function(ch, report)
  local _ <close> = setmetatable({}, { __close = function() report:send("closed") end })
  ch:receive()
end, ch, report)
until_waiting(blocked)
assert(blocked:cancel("from the host"))
local ok, err = blocked:join()
assert(ok == false and err == "cancelled: from the host", tostring(err))
assert(report:receive() == "closed")
assert(blocked:cancel_slices() <= 3)

local spinning = lutra.spawn(function(report)
  report:send("spinning")
  local i = 0
  while true do i = i + 1 end
end, report)
assert(report:receive() == "spinning")
assert(spinning:cancel("loop"))
assert(select(2, spinning:join()) == "cancelled: loop")
assert(spinning:cancel_slices() <= 3)

-- A process blocked in each blocking call is cancelled by the host, its
-- to-be-closed variable closed, within 3 time slices.
local forever = lutra.channel() -- nobody sends or receives on it
local s = lutra.shared { flag = 0, n = 0 }
local sleeper = lutra.spawn(function(ch) ch:receive() end, forever)
local victims = {
  { "send", function(ch) ch:send("never taken") end, lutra.channel() },
  { "mailbox receive", function() lutra.receive() end },
  { "select", function(a) lutra.select(a, lutra.channel()) end, forever },
  { "select with a timeout", function(a) lutra.select(a, 1e6) end, forever },
  { "try_receive with a timeout", function(a) a:try_receive(1e6) end, forever },
  { "sleep", function() lutra.sleep(1e6) end },
  { "join", function(other) other:join() end, sleeper },
  { "join with a timeout", function(other) other:join(1e6) end, sleeper },
  { "retry", function(s)
      lutra.atomic(function()
        s.n = s.n + 1
        if s.flag == 0 then lutra.retry() end
      end)
    end, s },
  { "luaproc receive", function()
      local luaproc = require "luaproc"
      luaproc.newchannel("module-cancel")
      luaproc.receive("module-cancel")
    end },
  { "user coroutine", function(ch) coroutine.wrap(function() ch:receive() end)() end, forever },
}
for _, victim in ipairs(victims) do
  local name, body, arg = victim[1], victim[2], victim[3]
  local p = lutra.spawn(function(report, body, arg)
    local _ <close> = setmetatable({}, { __close = function() report:send("closed") end })
    body(arg)
  end, report, body, arg)
  until_waiting(p)
  assert(p:cancel(name), name)
  local ok, err = p:join()
  assert(ok == false and err == "cancelled: " .. name, name .. ": " .. tostring(err))
  assert(report:receive() == "closed", name)
  assert(p:cancel_slices() <= 3, name .. ": " .. p:cancel_slices() .. " slices")
end
assert(s.n == 0, "the retried transaction left a trace")
assert(sleeper:status() == "waiting")
assert(sleeper:cancel())

-- Join with a timeout.
local later = lutra.spawn(function(ch) return ch:receive() end, ch)
local nothing, why = later:join(0.01)
assert(nothing == nil and why == "timeout")
ch:send("now")
assert(later:join() == "now")

-- Monitors: the host's mailbox gets the notice, once.
local m = lutra.spawn(function() return "bye" end)
lutra.monitor(m)
local down = lutra.receive()
assert(down[1] == "down" and down[2] == m and down[3] == "returned" and down[4] == "bye")
assert(lutra.receive(0) == nil)

-- Each way of ending reaches every monitor once, in the host's mailbox.
local gate = lutra.channel()
local ends = {
  { "returned", function(gate) gate:receive() return "value" end, "value" },
  { "failed", function(gate) gate:receive() error("boom", 0) end, "boom" },
  { "cancelled", function(gate) gate:receive() end, "cancelled: by the host" },
}
for _, case in ipairs(ends) do
  local status, body, value = case[1], case[2], case[3]
  local p = lutra.spawn(body, gate)
  lutra.monitor(p)
  lutra.monitor(p) -- a second monitor: a second notice
  until_waiting(p)
  if status == "cancelled" then assert(p:cancel("by the host")) else gate:send() end
  for _ = 1, 2 do
    local down = lutra.receive()
    assert(down[1] == "down" and down[2] == p and down[3] == status, status .. ": " .. tostring(down[3]))
    assert(down[4] == value or tostring(down[4]):find(value, 1, true), status .. ": " .. tostring(down[4]))
  end
  assert(lutra.receive(0) == nil, status .. ": a third notice")
  -- Monitoring a process that has ended delivers at once.
  lutra.monitor(p)
  local down = lutra.receive()
  assert(down[2] == p and down[3] == status, status)
end

-- A child linked to the host fails: the host's next blocking call raises.
local linked = lutra.spawn_link(function() error("child failed", 0) end)
lutra.monitor(linked)
local raised, message = pcall(lutra.receive)
-- Either the notice arrived first (the receive took it), or the cancellation.
if raised then
  assert(message[3] == "failed")
  raised, message = pcall(lutra.receive)
end
assert(not raised and message:find("cancelled: linked process#%d+ failed"), tostring(message))
print("ok")
