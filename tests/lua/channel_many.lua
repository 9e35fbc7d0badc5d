-- lutra-args: -w 2
-- Many producers and consumers over one rendezvous channel: nothing lost, nothing
-- duplicated, each producer's messages in order at each consumer.
local ch = lutra.channel()
local PRODUCERS, CONSUMERS, EACH = 8, 4, 250
local done = lutra.channel(CONSUMERS)
for c = 1, CONSUMERS do
  lutra.spawn(function(ch, done)
    local last, got = {}, {}
    for producer, i in ch:values() do
      assert(i > (last[producer] or 0), "out of order")
      last[producer] = i
      got[#got + 1] = producer * 100000 + i
    end
    done:send(got)
  end, ch, done)
end
local producers = {}
for p = 1, PRODUCERS do
  producers[p] = lutra.spawn(function(ch, p, each)
    for i = 1, each do ch:send(p, i) end
  end, ch, p, EACH)
end
for p = 1, PRODUCERS do producers[p]:join() end
ch:close()
local seen, count = {}, 0
for _ = 1, CONSUMERS do
  for _, key in ipairs(done:receive()) do
    assert(not seen[key], "duplicated message")
    seen[key] = true
    count = count + 1
  end
end
assert(count == PRODUCERS * EACH, "lost messages: " .. count)
print("ok")
