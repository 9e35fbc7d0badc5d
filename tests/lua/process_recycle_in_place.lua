-- lutra-args: -w 1
-- A recycled state's tables are restored whether a process changed them in place
-- (a field's value, its key kept), added and removed fields, or left them alone
-- (the restore then does not walk them: their fingerprint is unchanged). Processes
-- that touch nothing alternate with processes that each change one table, so that
-- every kind of change meets a state whose tables were untouched before it, and a
-- state restored after a change is restored again after the next one. One worker
-- makes the reuse deterministic.
local CHANGES = 12

local function visit(i)
  local changes = {
    function() math.pi = 3 end,
    function() string.format = nil end,
    function() table.insert = print end,
    function() math.pi = nil math.pi = 3 end,
    function() coroutine.leaked = true coroutine.leaked = nil end,
    function() lutra.spawn = lutra.now end,
    function() package.loaded.math = nil end,
    function() utf8.charpattern = "." end,
    function() for i = 1, 50 do os["leaked" .. i] = i end end,
    function() getmetatable("").__index = {} end,
    function() _G.print, _G.leaked = nil, true end,
    function() io.write = nil io.leaked = io.write end,
  }
  assert(math.pi > 3.14 and type(string.format) == "function", i)
  assert(type(table.insert) == "function" and table.insert ~= print, i)
  assert(coroutine.leaked == nil and lutra.spawn ~= lutra.now, i)
  assert(package.loaded.math == math and utf8.charpattern ~= ".", i)
  assert(os.leaked1 == nil and os.leaked50 == nil, i)
  assert(getmetatable("").__index == string, i)
  assert(type(print) == "function" and rawget(_G, "leaked") == nil, i)
  assert(type(io.write) == "function" and io.leaked == nil, i)
  if i % 2 == 0 then changes[i // 2 % #changes + 1]() end
  return tostring(math)
end

local reused, states = 0, {}
for i = 1, 4 * CHANGES do
  local state = lutra.spawn(visit, i):join()
  if states[state] then reused = reused + 1 end
  states[state] = true
end
assert(reused >= 4 * CHANGES - 5, "states were recycled: " .. reused)
print("process_recycle_in_place ok", reused)
