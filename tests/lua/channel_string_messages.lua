-- Strings in messages arrive byte for byte on every native path (`ch:send` /
-- `ch:receive`, `p:send` / `lutra.receive`, `luaproc.send` / `luaproc.receive`):
-- short ones travel inline and are pushed as C strings when they hold no zero byte,
-- long ones in a shared buffer. Each is sent many times in a row (the receiver's
-- frame pushes it from the same place: Lua's cache of API strings answers), then
-- beside strings of the same length that differ (the cache must compare contents).
local luaproc = require "luaproc"

local strings = {
  "", "message", "messagf", "\0", "a\0b", "ab\0", "\0ab", "\255\254\r\n",
  string.rep("x", 14), string.rep("x", 15), string.rep("y", 15), string.rep("x", 16),
  string.rep("x", 14) .. "\0", string.rep("x", 20), string.rep("x", 21), string.rep("x", 22),
  string.rep("x", 40), string.rep("x", 41), string.rep("x", 20) .. "\0",
  string.rep("z", 1000), string.rep("\0", 1000), "a\0" .. string.rep("b", 100),
}
local repeats = 20

-- The messages in the order sent: each string `repeats` times, then all of them
-- interleaved with their neighbours, each with its index and a second string.
-- (Captures nothing, so it crosses to the senders.)
local function each_message(strings, repeats, visit)
  for i, s in ipairs(strings) do
    for _ = 1, repeats do visit(i, s, s) end
  end
  for round = 1, repeats do
    for i, s in ipairs(strings) do visit(i, s, strings[(i + round) % #strings + 1]) end
  end
end

local function check(i, s, other, got_i, got_s, got_other)
  assert(got_i == i, "index " .. tostring(got_i) .. " instead of " .. i)
  assert(got_s == s and #got_s == #s, ("string #%d arrived as %q"):format(i, got_s))
  assert(got_other == other, ("the second string of #%d arrived as %q"):format(i, got_other))
end

-- Channels.
local ch = lutra.channel()
local sender = lutra.spawn(function(ch, send_all, strings, repeats)
  send_all(strings, repeats, function(i, s, other) ch:send(i, s, other) end)
end, ch, each_message, strings, repeats)
each_message(strings, repeats, function(i, s, other) check(i, s, other, ch:receive()) end)
sender:join()

-- Mailboxes.
local me = lutra.self()
local mailer = lutra.spawn(function(parent, send_all, strings, repeats)
  send_all(strings, repeats, function(i, s, other) parent:send(i, s, other) end)
end, me, each_message, strings, repeats)
each_message(strings, repeats, function(i, s, other) check(i, s, other, lutra.receive()) end)
mailer:join()

-- luaproc's named channels.
assert(luaproc.newchannel("strings"))
local proc = lutra.spawn(function(send_all, strings, repeats)
  local luaproc = require "luaproc"
  send_all(strings, repeats, function(i, s, other) assert(luaproc.send("strings", i, s, other)) end)
end, each_message, strings, repeats)
each_message(strings, repeats, function(i, s, other)
  check(i, s, other, luaproc.receive("strings"))
end)
proc:join()
print("ok")
