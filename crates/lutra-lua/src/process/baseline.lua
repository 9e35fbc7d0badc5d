-- A state's baseline: taken once, when the state is new (standard libraries and
-- `lutra` installed), and restored before the state runs another process, so that a
-- process never sees what an earlier one left behind.
--
-- Restored: every global; every table reachable from the globals in one or two steps
-- (the standard library tables, `lutra`, `package.loaded`, `package.preload`,
-- `package.searchers`...), each to its original fields and metatable; Lutra's method
-- tables; the string metatable and the metatables of the basic types (as set with
-- `debug.setmetatable`); the default input and output files; the garbage collector's
-- mode; the random seed (re-seeded).
--
-- Not restored: the registry (reachable only through `debug.getregistry`), tables
-- deeper than two steps from the globals, and state outside Lua (files left open are
-- closed when collected; the C locale is shared by the whole OS process).

local next, type, rawset, pairs = next, type, rawset, pairs
local getmeta, setmeta = debug.getmetatable, debug.setmetatable
local getregistry, collectgarbage, randomseed = debug.getregistry, collectgarbage, math.randomseed
local io_input, io_output, stdin, stdout = io.input, io.output, io.stdin, io.stdout

local snapshots, seen = {}, {}

local function snap(t)
  if seen[t] then return end
  seen[t] = true
  local copy = {}
  for k, v in next, t do copy[k] = v end
  snapshots[#snapshots + 1] = { t, copy, getmeta(t) }
end

snap(_G)
for _, v in next, _G do
  if type(v) == "table" then
    snap(v)
    for _, w in next, v do
      if type(w) == "table" then snap(w) end
    end
  end
end
for k, v in pairs(getregistry()) do
  if type(k) == "string" and k:find("^lutra%.methods%.") and type(v) == "table" then snap(v) end
end
snap(getmeta(""))

-- One sample value of each basic type, with its metatable.
local samples = { false, 0, "", print, coroutine.running() }
local type_metas = {}
for i, sample in next, samples do type_metas[i] = getmeta(sample) or false end
local nil_meta = getmeta(nil)

-- Fields are cleared during the traversal (which `next` allows for existing fields)
-- and a field is only written when it differs; with the original metatable back in
-- place first, a table that had none is indexed raw, without a call per field.
local function restore_table(t, copy, meta)
  setmeta(t, meta)
  if meta == nil then
    for k in next, t do
      if copy[k] == nil then t[k] = nil end
    end
    for k, v in next, copy do
      if t[k] ~= v then t[k] = v end
    end
  else
    for k in next, t do
      if copy[k] == nil then rawset(t, k, nil) end
    end
    for k, v in next, copy do rawset(t, k, v) end
  end
end

return function()
  setmeta(nil, nil_meta)
  for i, sample in next, samples do setmeta(sample, type_metas[i] or nil) end
  for i = 1, #snapshots do
    local s = snapshots[i]
    restore_table(s[1], s[2], s[3])
  end
  io_input(stdin)
  io_output(stdout)
  collectgarbage("restart")
  collectgarbage("incremental", 200, 100, 13)
  randomseed()
end
