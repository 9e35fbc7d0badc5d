-- Buffered channels: up to `capacity` sends return at once; the next one waits for a
-- receive. Misuse of the capacity raises.
local ch = lutra.channel(3)
for i = 1, 3 do ch:send(i) end            -- never blocks

local progress = lutra.channel(10)
local p = lutra.spawn(function(ch, progress)
  ch:send(4)                                -- buffer full: waits
  progress:send("fourth sent")
end, ch, progress)
-- That the fourth send waits until a receive is in crates/lutra-lua/tests/blocking.rs,
-- which sees the sender wait.
assert(ch:receive() == 1)
assert(select(2, progress:try_receive(2)) == "fourth sent")
for i = 2, 4 do assert(ch:receive() == i) end
p:join()

for _, bad in ipairs({ -1, 1.5, "x" }) do
  local ok, err = pcall(lutra.channel, bad)
  assert(not ok and err:find("bad argument #1 to 'channel'"), err)
end
print("ok")
