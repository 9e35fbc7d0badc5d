-- select is fair among ready channels: with both always ready, each is chosen about
-- half of the time (a binomial test: 2000 draws, p = 0.5, sd ~ 22; the bound below
-- is more than 6 sd away, so a fair select fails it with negligible probability).
local a, b = lutra.channel(4000), lutra.channel(4000)
for i = 1, 2000 do a:send(i) b:send(i) end
local counts = { [a] = 0, [b] = 0 }
for _ = 1, 2000 do
  local ch = lutra.select(a, b)
  counts[ch] = counts[ch] + 1
end
assert(counts[a] + counts[b] == 2000)
assert(math.abs(counts[a] - 1000) < 150, ("unfair select: %d vs %d"):format(counts[a], counts[b]))

-- three channels, one of them closed and drained: the two open ones share the draws
local c = lutra.channel()
c:close()
local x, y = lutra.channel(3000), lutra.channel(3000)
for i = 1, 1500 do x:send(i) y:send(i) end
local n = { [x] = 0, [y] = 0 }
for _ = 1, 1500 do
  local ch = lutra.select(c, x, y)
  n[ch] = n[ch] + 1
end
assert(math.abs(n[x] - 750) < 130, ("unfair select: %d vs %d"):format(n[x], n[y]))
print("ok")
