-- expect-stdout: ok
-- Cancellation, join with a timeout, monitors and links from a stock lua5.4 that
-- loaded the module: the host's main thread is not a task, but it cancels, joins,
-- monitors (its mailbox gets the notices) and is cancelled through a link.
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
