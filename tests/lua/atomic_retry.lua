-- lutra-args: -w 2
-- lutra.retry() parks the consumer (no busy wait) until the producer changes what it
-- read; a queue of items passes through exactly once, in order.
local q = lutra.shared({ head = 1, tail = 0, items = {} })
local N = 200

local consumer = lutra.spawn(function(q, n)
  local got = {}
  for i = 1, n do
    got[i] = lutra.atomic(function()
      if q.head > q.tail then lutra.retry() end
      local item = q.items[q.head]
      q.items[q.head] = nil
      q.head = q.head + 1
      return item
    end)
  end
  return got
end, q, N)

-- The consumer waits before anything is produced.
lutra.sleep(0.05)
for i = 1, N do
  lutra.atomic(function()
    q.tail = q.tail + 1
    q.items[q.tail] = i * 10
  end)
  if i % 50 == 0 then lutra.sleep(0.01) end
end
local got = consumer:join()
assert(#got == N)
for i = 1, N do assert(got[i] == i * 10, "item " .. i) end
local left = 0
for _ in pairs(q.items) do left = left + 1 end
assert(q.head == N + 1 and left == 0)

-- A flag set by another process wakes a process blocked in retry.
local flag = lutra.shared({ ready = false })
local waiter = lutra.spawn(function(flag)
  return lutra.atomic(function()
    if not flag.ready then lutra.retry() end
    return flag.value
  end)
end, flag)
lutra.sleep(0.05)
lutra.atomic(function() flag.value = "hello"; flag.ready = true end)
assert(waiter:join() == "hello")

-- retry outside atomic is an error; retry in a transaction that read nothing too.
local ok, err = pcall(lutra.retry)
assert(not ok and err:find("outside lutra.atomic"), err)
ok, err = pcall(lutra.atomic, function() lutra.retry() end)
assert(not ok and err:find("read no shared table"), err)
