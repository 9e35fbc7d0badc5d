-- Channels: capacity 0 (the default) is a rendezvous: `send` returns only once the
-- message was received; values cross as one message, FIFO.
local ch = lutra.channel()
local log = lutra.channel(100)

local p = lutra.spawn(function(ch, log)
  ch:send("a", 1, nil, 2.5)
  log:send("sent a")
  ch:send("b")
  log:send("sent b")
end, ch, log)

-- That the sender is still blocked in its first send (nobody received yet) is in
-- crates/lutra-lua/tests/blocking.rs, which sees the sender wait.
local x, n, none, f = ch:receive()
assert(x == "a" and n == 1 and none == nil and f == 2.5)
assert(math.type(n) == "integer" and math.type(f) == "float")
assert(select(2, log:try_receive(1)) == "sent a")
assert(ch:receive() == "b")
p:join()
assert(select(2, log:try_receive(1)) == "sent b")

-- tostring and identity
assert(tostring(ch):match("^channel#%d+$"))
local same = lutra.spawn(function(c) return c end, ch):join()
assert(same == ch, "a channel that comes back is the same handle")
print("ok")
