-- lutra-args: -w 2
-- lutra-env: LUTRA_STM_MAX_SET_ENTRIES=64
-- expect-stdout: printed once
-- A transaction larger than the engine's set limit (lowered to 64 entries here, so
-- that small transactions show it): it used to restart forever without a word, and one
-- that had printed printed again at every restart. Now a key read again needs no new
-- entry, a transaction that still outgrows the sets commits on its next attempt
-- (irrevocable), and one that printed runs exactly once.
local KEYS = 500
local s = lutra.shared({ x = 1 })
for i = 1, KEYS do s[i] = i end
local expected = KEYS * (KEYS + 1) // 2

-- Output makes the transaction irrevocable; then 5,000 reads of one key.
local runs = 0
lutra.atomic(function()
  print("printed once")
  runs = runs + 1
  assert(runs == 1, "a transaction that printed ran again")
  local sum = 0
  for _ = 1, 5000 do sum = sum + s.x end
  assert(sum == 5000)
end)

-- 5,000 reads of one key, without output: one attempt is enough.
local attempts = 0
lutra.atomic(function()
  attempts = attempts + 1
  assert(attempts == 1, "re-reads of one key needed attempt " .. attempts)
  local sum = 0
  for _ = 1, 5000 do sum = sum + s.x end
  return sum
end)

-- Reads of 500 keys, then writes of 500 keys: past the limit, each commits on its
-- second attempt.
attempts = 0
local total = lutra.atomic(function()
  attempts = attempts + 1
  assert(attempts <= 2, "a large read-only transaction began attempt " .. attempts)
  local sum = 0
  for i = 1, KEYS do sum = sum + s[i] end
  return sum
end)
assert(total == expected)
attempts = 0
lutra.atomic(function()
  attempts = attempts + 1
  assert(attempts <= 2, "a large writing transaction began attempt " .. attempts)
  for i = 1, KEYS do s[i] = s[i] + 1 end
end)
assert(attempts == 2)
expected = expected + KEYS

-- Two processes at once: each moves amounts between keys and audits the whole table
-- (past the limit), half of the audits printing. The total never changes and every
-- audit prints exactly once.
local procs = {}
for id = 1, 2 do
  procs[id] = lutra.spawn(function(s, id, keys, expected)
    local prints = 0
    for round = 1, 20 do
      local from, to = (id * round) % keys + 1, (id * round * 7) % keys + 1
      lutra.atomic(function()
        s[from] = s[from] - 3
        s[to] = s[to] + 3
      end)
      local printing = round % 2 == 0
      local runs = 0
      lutra.atomic(function()
        local sum = 0
        for i = 1, keys do sum = sum + s[i] end
        assert(sum == expected, "an audit saw " .. sum)
        if printing then
          print("audit " .. id .. "." .. round .. " " .. sum)
          -- Past the print, the attempt is irrevocable: it never runs again.
          runs = runs + 1
          assert(runs == 1, "a printing audit ran again")
        end
      end)
      if printing then prints = prints + 1 end
    end
    return prints
  end, s, id, KEYS, expected)
end
for id = 1, 2 do assert(procs[id]:join() == 10) end
local sum = 0
for i = 1, KEYS do sum = sum + s[i] end
assert(sum == expected)
