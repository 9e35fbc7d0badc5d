-- lutra-args: -w 2
-- luaproc's second experiment in small: 20 senders and 20 receivers, 200 messages
-- each, over 2 named channels; every message arrives exactly once.
local luaproc = require "luaproc"
assert(luaproc.newchannel("c1") and luaproc.newchannel("c2") and luaproc.newchannel("sums"))
for i = 1, 20 do
  local chan = (i % 2 == 0) and "c1" or "c2"
  assert(luaproc.newproc(([[
    for m = 1, 200 do luaproc.send(%q, m) end
  ]]):format(chan)))
  assert(luaproc.newproc(([[
    local sum = 0
    for m = 1, 200 do sum = sum + luaproc.receive(%q) end
    luaproc.send("sums", sum)
  ]]):format(chan)))
end
local total = 0
for _ = 1, 20 do total = total + luaproc.receive("sums") end
assert(total == 20 * (200 * 201 / 2), total)
luaproc.wait()
print("ok")
