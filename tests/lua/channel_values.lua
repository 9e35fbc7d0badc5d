-- `for ... in ch:values()` iterates until the channel is closed (multiple values per
-- message; the loop sees the first as its control variable).
local ch = lutra.channel()
lutra.spawn(function(ch)
  for i = 1, 10 do ch:send(i, i * i) end
  ch:close()
end, ch)
local sum, squares = 0, 0
for i, sq in ch:values() do
  sum = sum + i
  squares = squares + sq
end
assert(sum == 55 and squares == 385)

-- several consumers share the work; every message goes to exactly one of them
local work, results = lutra.channel(8), lutra.channel(200)
local consumers = {}
for c = 1, 4 do
  consumers[c] = lutra.spawn(function(work, results)
    local n = 0
    for v in work:values() do results:send(v) n = n + 1 end
    return n
  end, work, results)
end
for i = 1, 200 do work:send(i) end
work:close()
local handled = 0
for c = 1, 4 do handled = handled + consumers[c]:join() end
assert(handled == 200)
local seen, total = {}, 0
for _ = 1, 200 do
  local v = results:receive()
  assert(not seen[v], "duplicated message")
  seen[v] = true
  total = total + v
end
assert(total == 200 * 201 / 2)
print("ok")
