-- lutra-args: --mailbox-cap 2
-- A mailbox buffers up to --mailbox-cap messages and delivers them in order. That the
-- next sender waits until the owner receives, and that a sender waiting on a process
-- that finishes gets an error, are in crates/lutra-lua/tests/blocking.rs, where the
-- owner moves only once the sender provably waits.
local sink = lutra.spawn(function()
  local got = {}
  for i = 1, 3 do got[i] = lutra.receive() end
  return got[1], got[2], got[3]
end)
for i = 1, 3 do sink:send(i) end
local a, b, c = sink:join()
assert(a == 1 and b == 2 and c == 3)
print("ok")
