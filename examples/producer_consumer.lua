-- producer_consumer.lua — producers at different paces, each on its own buffered
-- channel; consumers take from whichever channel is ready with `lutra.select`, and
-- notice quiet spells through select's timeout.
--
--   producer "fast"   --ch1-->\
--   producer "steady" --ch2--> select(ch1, ch2, ch3, timeout) in each consumer
--   producer "bursty" --ch3-->/
--
-- A producer closes its channel when done; select skips closed channels and raises
-- an error containing "closed" once all of them are closed, which ends a consumer.
-- The main process checks that every item was consumed exactly once.
--
--   lutra examples/producer_consumer.lua [items_per_producer] [consumers] [timeout_ms]
--
-- Defaults: 200 items per producer, 2 consumers, 20 ms timeout.

local items, consumers, timeout_ms = ...
items = math.tointeger(tonumber(items)) or 200
consumers = math.tointeger(tonumber(consumers)) or 2
timeout_ms = tonumber(timeout_ms) or 20

-- Sends `count` items (name, i) on `ch`, pausing `pause` seconds after every
-- `burst` items, then closes `ch`.
local function producer(ch, name, count, burst, pause)
  for i = 1, count do
    ch:send(name, i)
    if i % burst == 0 then lutra.sleep(pause) end
  end
  ch:close()
end

-- Takes items from any ready channel until all are closed. Returns how many it
-- took from each producer, the sum of their sequence numbers, and how many times
-- it waited a whole timeout for nothing.
local function consumer(...)
  local taken, sum, idle = {}, 0, 0
  while true do
    local ok, ch, name, i = pcall(lutra.select, ...)
    if not ok then
      assert(tostring(ch):find("closed"), ch) -- every channel is closed: done
      break
    end
    if ch == nil then
      idle = idle + 1 -- the timeout passed with no channel ready
    else
      taken[name] = (taken[name] or 0) + 1
      sum = sum + i
    end
  end
  return taken, sum, idle
end

local ch1, ch2, ch3 = lutra.channel(16), lutra.channel(16), lutra.channel(16)
print(string.format("producer_consumer.lua: 3 producers x %d items, %d consumers, %g ms timeout",
  items, consumers, timeout_ms))
lutra.spawn(producer, ch1, "fast", items, items, 0)            -- never pauses
lutra.spawn(producer, ch2, "steady", items, 10, 0.002)          -- 2 ms every 10 items
lutra.spawn(producer, ch3, "bursty", items, 50, 0.05)           -- 50 ms every 50 items

local procs = {}
for c = 1, consumers do
  -- the consumer calls select(ch1, ch2, ch3, seconds): the timeout goes last
  procs[c] = lutra.spawn(consumer, ch1, ch2, ch3, timeout_ms / 1000)
end

local per_producer, sum = {}, 0
for c = 1, consumers do
  local taken, s, idle = procs[c]:join()
  local parts = {}
  for _, name in ipairs({ "fast", "steady", "bursty" }) do
    per_producer[name] = (per_producer[name] or 0) + (taken[name] or 0)
    parts[#parts + 1] = string.format("%s %d", name, taken[name] or 0)
  end
  sum = sum + s
  print(string.format("  consumer %d took %s; idle timeouts: %d", c, table.concat(parts, ", "), idle))
end

local expected = 3 * items * (items + 1) // 2
for _, name in ipairs({ "fast", "steady", "bursty" }) do
  assert(per_producer[name] == items, name .. ": an item was lost or taken twice")
end
assert(sum == expected, "sequence numbers do not add up")
print(string.format("all %d items consumed exactly once (sum %d)", 3 * items, sum))
