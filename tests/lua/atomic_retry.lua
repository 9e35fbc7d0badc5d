-- lutra-args: -w 2
-- A queue of items passes through lutra.retry() exactly once, in order. That retry
-- parks (no busy wait) until another process commits, with the commit made only once
-- the waiter provably waits, is in crates/lutra-lua/tests/blocking.rs.
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

for i = 1, N do
  lutra.atomic(function()
    q.tail = q.tail + 1
    q.items[q.tail] = i * 10
  end)
end
local got = consumer:join()
assert(#got == N)
for i = 1, N do assert(got[i] == i * 10, "item " .. i) end
local left = 0
for _ in pairs(q.items) do left = left + 1 end
assert(q.head == N + 1 and left == 0)

-- retry outside atomic is an error; retry in a transaction that read nothing too.
local ok, err = pcall(lutra.retry)
assert(not ok and err:find("outside lutra.atomic"), err)
ok, err = pcall(lutra.atomic, function() lutra.retry() end)
assert(not ok and err:find("read no shared table"), err)
