-- lutra-args: -w 1
-- Finished states are recycled, and a process never sees what an earlier process
-- left in its state: not in its globals, its library tables, its registry or its
-- loaded modules, not even what its finalizers store. One worker makes the reuse
-- deterministic: a process's state is back in the pool before its joiner runs.
local function visit(i)
  -- what an earlier process would have left behind
  assert(leaked == nil, "a global of an earlier process")
  assert(string.leaked == nil and math.pi > 3.14, "a library table of an earlier process")
  assert(getmetatable(_G) == nil, "the globals' metatable of an earlier process")
  assert(getmetatable("").leaked == nil and getmetatable("").__index == string)
  assert(debug.getmetatable(0) == nil and debug.getmetatable(print) == nil)
  assert(package.loaded.leaky == nil and package.preload.leaky == nil)
  assert(arg == nil, "the main script's arg")
  assert(type(print) == "function" and type(lutra.spawn) == "function")
  assert(io.output() == io.stdout and io.input() == io.stdin)
  local registry = debug.getregistry()
  assert(registry.process_recycle_mark == nil, "a registry entry of an earlier process")
  assert(getmetatable(string) == nil, "a library's metatable of an earlier process")
  assert(package.loaded.string == string and package.loaded._G == _G)
  assert(leaked_by_finalizer == nil, "a global stored by an earlier process's finalizer")
  -- leave everything dirty
  leaked = i
  string.leaked = i
  math.pi = 3
  lutra.spawn = nil
  setmetatable(_G, { __index = function() return "ghost" end })
  getmetatable("").leaked = true
  debug.setmetatable(0, { __index = {} })
  debug.setmetatable(print, { __index = {} })
  package.loaded.leaky = true
  package.preload.leaky = function() end
  io.output(io.stderr)
  io.input(io.stderr)
  registry.process_recycle_mark = i
  setmetatable(string, { __index = function() return "ghost" end })
  package.loaded.string = nil
  package.loaded._G = { leaked = i }
  finalized = setmetatable({}, { __gc = function() leaked_by_finalizer = i end })
  -- the library table's address tells the main script whether this state was reused
  return tostring(math)
end

local reused, states = 0, {}
for i = 1, 30 do
  local state = lutra.spawn(visit, i):join()
  if states[state] then reused = reused + 1 end
  states[state] = true
end
assert(reused >= 25, "states were recycled: " .. reused)
-- failed processes' states are recycled (and cleaned) as well
for i = 1, 5 do
  local p = lutra.spawn(function() leaked = "from a failure" error("failing on purpose") end)
  assert(not pcall(p.join, p))
  assert(lutra.spawn(function() return leaked end):join() == nil)
end
print("process_recycle ok", reused)
