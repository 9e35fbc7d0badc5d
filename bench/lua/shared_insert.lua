-- One `lutra.atomic` inserting N keys into a shared table: memory at its peak
-- against the memory of the finished table. Prints the process's resident memory
-- (kB, from /proc/self/status) before, at the peak (VmHWM) and after the commit.
-- With a batch size B, the keys go in by transactions of B keys each instead: the
-- peak then measures the finished table (plus one small transaction).
--   lutra shared_insert.lua N [B]
local n, batch = ...
n = math.tointeger(tonumber(n)) or 1000000
batch = math.tointeger(tonumber(batch)) or n

local function status(field)
  local f = assert(io.open("/proc/self/status"))
  local text = f:read("a")
  f:close()
  return tonumber(text:match(field .. ":%s*(%d+)"))
end

collectgarbage()
local base = status("VmRSS")
local t = lutra.shared()
for first = 1, n, batch do
  lutra.atomic(function()
    for i = first, math.min(n, first + batch - 1) do t[i] = i end
  end)
end
collectgarbage()
local final = status("VmRSS")
local peak = status("VmHWM")
assert(#t == n)
print(string.format("shared_insert: ok n=%d batch=%d base_kb=%d peak_kb=%d final_kb=%d", n, batch, base, peak, final))
