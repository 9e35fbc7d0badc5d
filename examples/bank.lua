-- bank.lua — accounts in a shared transactional table, transfers between them in
-- `lutra.atomic`, from many processes at once; an auditor process sums every
-- account inside a transaction while the transfers run, and always sees the same
-- total. At the end the main process prints the total: it is conserved.
--
--   lutra examples/bank.lua [accounts] [tellers] [transfers_per_teller]
--
-- Defaults: 32 accounts of 1,000 each, 4 teller processes, 5,000 transfers each.
--
-- Notes:
-- - Outside `lutra.atomic`, each single read or write of a shared table is atomic,
--   but `t.x = t.x + 1` (a read, then a write) is not: wrap it in `lutra.atomic`.
-- - A transaction may run more than once (on a conflict), so it must not change
--   process-local state it depends on: draw the random numbers before `atomic`.

local accounts, tellers, transfers = ...
accounts = math.tointeger(tonumber(accounts)) or 32
tellers = math.tointeger(tonumber(tellers)) or 4
transfers = math.tointeger(tonumber(transfers)) or 5000
local INITIAL = 1000

local bank = lutra.shared()
for i = 1, accounts do bank[i] = INITIAL end

-- Moves a random amount between two random accounts, `count` times; a transfer
-- that would overdraw the source is declined. Returns (done, declined).
local function teller(bank, accounts, count, seed)
  local x, done, declined = seed, 0, 0
  local function random(n)
    x = x * 6364136223846793005 + 1442695040888963407
    return (x >> 33) % n + 1
  end
  for _ = 1, count do
    local from, to, amount = random(accounts), random(accounts), random(200)
    local ok = lutra.atomic(function()
      if bank[from] < amount then return false end
      bank[from] = bank[from] - amount
      bank[to] = bank[to] + amount
      return true
    end)
    if ok then done = done + 1 else declined = declined + 1 end
  end
  return done, declined
end

-- Sums every account in one transaction until `stop` has a message; returns how
-- many audits it made and every distinct total it saw.
local function auditor(bank, accounts, stop)
  local audits, seen = 0, {}
  repeat
    local total = lutra.atomic(function()
      local sum = 0
      for i = 1, accounts do sum = sum + bank[i] end
      return sum
    end)
    seen[total] = true
    audits = audits + 1
    lutra.yield()
  until stop:try_receive()
  local totals = {}
  for total in pairs(seen) do totals[#totals + 1] = total end
  return audits, totals
end

print(string.format("bank.lua: %d accounts of %d, %d tellers x %d transfers",
  accounts, INITIAL, tellers, transfers))
local stop = lutra.channel(1)
local audit = lutra.spawn(auditor, bank, accounts, stop)
local procs = {}
for i = 1, tellers do procs[i] = lutra.spawn(teller, bank, accounts, transfers, i) end

local done, declined = 0, 0
for i = 1, tellers do
  local d, n = procs[i]:join()
  done, declined = done + d, declined + n
end
stop:send(true)
local audits, totals = audit:join()

local total = 0
for i = 1, accounts do total = total + bank[i] end
print(string.format("%d transfers made, %d declined (not enough money)", done, declined))
print(string.format("auditor: %d audits, totals seen: %s", audits, table.concat(totals, ", ")))
print(string.format("total %d (expected %d): %s", total, accounts * INITIAL,
  total == accounts * INITIAL and "conserved" or "NOT CONSERVED"))
assert(total == accounts * INITIAL and #totals == 1 and totals[1] == total)
