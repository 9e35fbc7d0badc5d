-- The errors of the message calls, word for word, on each path that raises them:
-- the native calls (scalars) and the Lua loops behind them (a table, a timeout, a
-- call where the native one cannot park).
local luaproc = require "luaproc"

local function fails_with(expected, f, ...)
  local ok, problem = pcall(f, ...)
  assert(not ok, "no error; expected: " .. expected)
  assert(problem:find(expected, 1, true), ("got %q\nexpected %q"):format(problem, expected))
end

-- Runs `f` in a C function that cannot yield (a table.sort comparator).
local function in_c(f)
  table.sort({ 1, 2 }, function(a, b) f() return a < b end)
end

-- Runs `f` in a coroutine resumed from a C function that cannot yield.
local function in_coroutine_in_c(f)
  in_c(function()
    local ok, problem = coroutine.resume(coroutine.create(f))
    assert(not ok)
    error(problem, 0)
  end)
end

local IN_C = " here: the call runs inside a C function (a metamethod, a table.sort "
  .. "comparator, string.gsub's callback...) that cannot yield"
local UNREACHABLE = " here: this coroutine was resumed from a C function that cannot yield, "
  .. "so the scheduler cannot be reached"

local ch = lutra.channel()
local name = tostring(ch)
assert(name:match("^channel#%d+$"))

-- Blocking where it cannot: the Lua loops (in C) and the native calls (in a coroutine).
fails_with("cannot block on receive on " .. name .. IN_C, in_c, function() ch:receive() end)
fails_with("cannot block on send on " .. name .. IN_C, in_c, function() ch:send(1) end)
fails_with("cannot block on receive on " .. name .. UNREACHABLE,
  in_coroutine_in_c, function() ch:receive() end)
fails_with("cannot block on send on " .. name .. UNREACHABLE,
  in_coroutine_in_c, function() ch:send(1) end)
fails_with("cannot block on send on " .. name .. UNREACHABLE,
  in_coroutine_in_c, function() ch:send({}) end)
fails_with("cannot block on receive on " .. name .. UNREACHABLE,
  in_coroutine_in_c, function() ch:try_receive(60) end)
fails_with("cannot block on its mailbox (lutra.receive)" .. IN_C, in_c, function() lutra.receive() end)
fails_with("cannot block on its mailbox (lutra.receive)" .. UNREACHABLE,
  in_coroutine_in_c, function() lutra.receive() end)
fails_with("cannot block on its mailbox (lutra.receive)" .. UNREACHABLE,
  in_coroutine_in_c, function() lutra.receive(60) end)
assert(luaproc.newchannel("texts"))
fails_with("cannot block on luaproc.receive on channel 'texts'" .. IN_C,
  in_c, function() luaproc.receive("texts") end)
fails_with("cannot block on luaproc.send on channel 'texts'" .. UNREACHABLE,
  in_coroutine_in_c, function() luaproc.send("texts", 1) end)
fails_with("cannot block on luaproc.receive on channel 'texts'" .. UNREACHABLE,
  in_coroutine_in_c, function() luaproc.receive("texts") end)
fails_with("cannot block on receive on " .. name .. " inside lutra.atomic: a transaction "
  .. "cannot wait for another process (use lutra.retry() to wait for a change to shared tables)",
  lutra.atomic, function() ch:receive() end)

-- A send to a process that has finished, natively and by the Lua loop.
local p = lutra.spawn(function() end)
p:join()
local finished = "cannot send to process#" .. tostring(p):match("^process#(%d+)") .. ": it has finished"
fails_with(finished, function() p:send(1) end)
fails_with(finished, function() p:send({}) end)

-- Closed channels.
ch:close()
fails_with("send on " .. name .. ": the channel is closed", function() ch:send(1) end)
fails_with("send on " .. name .. ": the channel is closed", function() ch:send({}) end)
fails_with("receive on " .. name .. ": the channel is closed", function() ch:receive() end)
assert(luaproc.delchannel("texts"))
local none, why = luaproc.send("texts", 1)
assert(none == nil and why == "channel 'texts' does not exist", why)
none, why = luaproc.receive("texts")
assert(none == nil and why == "channel 'texts' does not exist", why)
