-- lutra-args: -w 2
-- Conservation under contention: 12 processes do random transfers between 16
-- accounts of a shared table inside lutra.atomic; readers check the total in
-- read-only transactions all along; the total is conserved at the end.
local ACCOUNTS, PROCESSES, TRANSFERS, START = 16, 12, 1500, 1000
local bank = lutra.shared()
for i = 1, ACCOUNTS do bank[i] = START end
local expected = ACCOUNTS * START

local workers = {}
for w = 1, PROCESSES do
  workers[w] = lutra.spawn(function(bank, seed, n, accounts)
    math.randomseed(seed)
    for _ = 1, n do
      local from, to = math.random(accounts), math.random(accounts)
      local amount = math.random(1, 50)
      lutra.atomic(function()
        bank[from] = bank[from] - amount
        bank[to] = bank[to] + amount
      end)
    end
  end, bank, w, TRANSFERS, ACCOUNTS)
end
local auditor = lutra.spawn(function(bank, accounts, expected)
  for _ = 1, 200 do
    local total = lutra.atomic(function()
      local sum = 0
      for i = 1, accounts do sum = sum + bank[i] end
      return sum
    end)
    assert(total == expected, "an audit saw " .. total)
    lutra.yield()
  end
end, bank, ACCOUNTS, expected)
for _, w in ipairs(workers) do w:join() end
auditor:join()
local total = 0
for i = 1, ACCOUNTS do total = total + bank[i] end
assert(total == expected, "total " .. total .. " ~= " .. expected)
assert(#bank == ACCOUNTS)
