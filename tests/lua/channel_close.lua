-- close: idempotent; messages sent before close are still delivered; a closed and
-- drained channel raises "closed" on receive; send on a closed channel raises
-- "closed"; close wakes every blocked sender (error) and receiver.
local ch = lutra.channel(2)
ch:send("x")
ch:send("y")
ch:close()
ch:close()                                   -- idempotent
assert(ch:receive() == "x" and ch:receive() == "y", "sent before close: delivered")
local ok, err = pcall(ch.receive, ch)
assert(not ok and err:find("closed"), err)
ok, err = pcall(ch.send, ch, "z")
assert(not ok and err:find("closed"), err)

-- Receivers and senders on a channel that closes fail with "closed", whether they
-- blocked before the close or came after it. That close wakes those already blocked
-- is in crates/lutra-lua/tests/blocking.rs, where the close comes once they wait.
local empty = lutra.channel()
local receivers = {}
for i = 1, 3 do
  receivers[i] = lutra.spawn(function(c)
    local ok, err = pcall(c.receive, c)
    return ok, err
  end, empty)
end
-- blocked senders are woken with an error
local full = lutra.channel()
local senders = {}
for i = 1, 3 do
  senders[i] = lutra.spawn(function(c, i)
    local ok, err = pcall(c.send, c, i)
    return ok, err
  end, full, i)
end
empty:close()
full:close()
for i = 1, 3 do
  local ok, err = receivers[i]:join()
  assert(ok == false and err:find("closed"), tostring(err))
  ok, err = senders[i]:join()
  assert(ok == false and err:find("closed"), tostring(err))
end
-- the failed rendezvous sends were not delivered
ok, err = full:try_receive()
assert(not ok and err == "closed")

-- A buffered send that returned before close is delivered and one still waiting
-- fails: in crates/lutra-lua/tests/blocking.rs.
print("ok")
