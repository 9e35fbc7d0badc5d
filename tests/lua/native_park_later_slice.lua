-- lutra-args: -w 1
-- A native channel call that parks after a process's first slice keeps its frame
-- (the handle, the arguments) across the park: once resumed it answers only its own
-- values, and a cancellation that reaches it there raises at the call; a send
-- cancelled there delivers nothing. (The first slice's park goes through mlua,
-- which empties the frame; every later one does not.)

-- Answers: exactly the values sent, none of the frame's.
local ch, report = lutra.channel(), lutra.channel(8)
local p = lutra.spawn(function(ch, report)
  lutra.yield() -- the first slice ends here: the parks below come later
  report:send("ready")
  local n = select("#", ch:receive())
  local a, b, c = ch:receive()
  report:send(n, a, b, c)
  ch:send("back", 2) -- parks (a rendezvous) until the main process takes it
  return "done"
end, ch, report)
assert(report:receive() == "ready")
ch:send(1, "two", 3.5)
ch:send(nil, false, "three")
local n, a, b, c = report:receive()
assert(n == 3, "values answered: " .. tostring(n))
assert(a == nil and b == false and c == "three", tostring(c))
local x, y = ch:receive()
assert(x == "back" and y == 2, tostring(x))
assert(p:join() == "done")

-- Cancelled while parked in a receive after the first slice: the call raises.
p = lutra.spawn(function(ch, report)
  lutra.yield()
  report:send("ready")
  local ok, err = pcall(ch.receive, ch)
  report:send(ok, err)
end, ch, report)
assert(report:receive() == "ready")
assert(p:cancel("stop receiving") == true)
local ok, err = report:receive()
assert(ok == false and err:find("cancelled: stop receiving", 1, true), tostring(err))
assert(select(2, p:join()) == "cancelled: stop receiving")

-- Cancelled while parked in a send after the first slice: the call raises, and
-- the message is taken back (nobody receives it).
local quiet = lutra.channel()
p = lutra.spawn(function(quiet, report)
  lutra.yield()
  report:send("ready")
  local ok, err = pcall(quiet.send, quiet, 1, "two", 3.5)
  report:send(ok, err)
end, quiet, report)
assert(report:receive() == "ready")
assert(p:cancel("stop sending") == true)
ok, err = report:receive()
assert(ok == false and err:find("cancelled: stop sending", 1, true), tostring(err))
assert(quiet:try_receive() == false, "a cancelled send delivered its message")
print("ok")
