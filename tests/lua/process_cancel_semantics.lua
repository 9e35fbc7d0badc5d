-- What a cancellation does besides stopping a blocked process: a process that
-- cancels itself raises at once; the first reason stands; a process may catch the
-- error (pcall, to-be-closed variables and __gc all run) and still ends cancelled;
-- after catching it, its next blocking call raises again; cancelling a finished
-- process does nothing; bad arguments are reported at the caller.

-- Cancelling oneself raises at the call.
local p = lutra.spawn(function()
  lutra.self():cancel("by itself")
  error("not reached")
end)
local ok, err = p:join()
assert(ok == false and err == "cancelled: by itself", tostring(err))

-- The first reason stands; a second request does nothing.
local ch = lutra.channel()
p = lutra.spawn(function(ch) ch:receive() end, ch)
assert(p:cancel("first") == true)
assert(p:cancel("second") == false)
ok, err = p:join()
assert(ok == false and err == "cancelled: first", tostring(err))

-- No reason: the message is "cancelled".
p = lutra.spawn(function(ch) ch:receive() end, ch)
assert(p:cancel() == true)
assert(select(2, p:join()) == "cancelled")

-- Caught: pcall returns the error, __close and __gc run, a later blocking call
-- raises again, and the process ends cancelled though it returned.
local report = lutra.channel(8)
p = lutra.spawn(function(ch, report)
  local collected = false
  do
    setmetatable({}, { __gc = function() collected = true end })
  end
  local closed = false
  local ok, err = pcall(function()
    local _ <close> = setmetatable({}, { __close = function() closed = true end })
    report:send("ready")
    ch:receive()
  end)
  collectgarbage()
  report:send(ok, err, closed, collected)
  local again_ok, again = pcall(ch.receive, ch)
  report:send(again_ok, again)
  return "went on"
end, ch, report)
assert(report:receive() == "ready")
assert(p:cancel("catch me"))
local caught_ok, caught, closed, collected = report:receive()
assert(caught_ok == false and caught:find("cancelled: catch me", 1, true), tostring(caught))
assert(closed == true, "the to-be-closed variable was closed")
assert(collected == true, "__gc ran")
local again_ok, again = report:receive()
assert(again_ok == false and again:find("cancelled: catch me", 1, true), tostring(again))
ok, err = p:join()
assert(ok == false and err == "cancelled: catch me", tostring(err))

-- Cancelling a finished process does nothing: its results stay.
p = lutra.spawn(function() return 42 end)
assert(p:join() == 42)
assert(p:cancel("late") == false)
assert(p:join() == 42)
assert(p:status() == "returned")

-- A failed process stays failed.
p = lutra.spawn(function() error("boom", 0) end)
assert(not pcall(p.join, p))
assert(p:cancel() == false)
local status, message = p:status()
assert(status == "failed" and message:find("boom"), status)

-- Bad arguments.
local bad_ok, bad = pcall(lutra.monitor, 42)
assert(not bad_ok and bad:find("bad argument #1 to 'monitor' (process expected, got number)", 1, true), bad)
bad_ok, bad = pcall(p.cancel, {})
assert(not bad_ok and bad:find("bad argument #1 to 'cancel' (process expected, got table)", 1, true), bad)
print("ok")
