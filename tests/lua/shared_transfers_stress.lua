-- lutra-args: -w 2
-- Transfers between the entries of a shared table by more processes than cores,
-- with keys created and removed on the way (an emptied entry leaves the table, a
-- missing one comes back), so the table's index is replaced while others read it.
-- Each transfer also inserts junk keys in a nested atomic that fails: its in-place
-- changes to the index must be undone. Auditors check the total in every snapshot;
-- at the end the total is conserved and no junk is left.
local ENTRIES, PROCESSES, TRANSFERS, START = 24, 24, 300, 4
local t = lutra.shared()
for i = 1, ENTRIES do t["e" .. i] = START end
local expected = ENTRIES * START

local function total(t, entries)
  local sum = 0
  for i = 1, entries do sum = sum + (t["e" .. i] or 0) end
  return sum
end

local movers = {}
for p = 1, PROCESSES do
  movers[p] = lutra.spawn(function(t, seed, n, entries)
    math.randomseed(seed)
    for round = 1, n do
      local from, to = "e" .. math.random(entries), "e" .. math.random(entries)
      lutra.atomic(function()
        local have = t[from] or 0
        local amount = math.min(have, math.random(1, 3))
        if from == to or amount == 0 then return end
        local ok = pcall(lutra.atomic, function()
          for j = 1, 3 do t["junk" .. seed .. "." .. round .. "." .. j] = j end
          error("undo the junk")
        end)
        assert(not ok)
        t[from] = have - amount > 0 and have - amount or nil
        t[to] = (t[to] or 0) + amount
      end)
    end
  end, t, p, TRANSFERS, ENTRIES)
end
local auditors = {}
for a = 1, 2 do
  auditors[a] = lutra.spawn(function(t, entries, expected, total)
    for _ = 1, 100 do
      local seen = lutra.atomic(total, t, entries)
      assert(seen == expected, "an audit saw " .. seen)
      lutra.yield()
    end
  end, t, ENTRIES, expected, total)
end
for _, p in ipairs(movers) do p:join() end
for _, a in ipairs(auditors) do a:join() end
assert(total(t, ENTRIES) == expected, "total " .. total(t, ENTRIES) .. " ~= " .. expected)
local keys = 0
for k, v in pairs(t) do
  assert(type(k) == "string" and k:match("^e%d+$"), "junk left: " .. tostring(k))
  assert(v > 0, "an emptied entry stayed")
  keys = keys + 1
end
local nonzero = 0
for i = 1, ENTRIES do if t["e" .. i] then nonzero = nonzero + 1 end end
assert(keys == nonzero)
