-- lutra-args: -w 1
-- Finished states are recycled, and a process never sees what an earlier process
-- left in its state. One worker makes the reuse deterministic: a process's state is
-- back in the pool before its joiner runs.
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
  assert(io.output() == io.stdout)
  -- the registry is not reset (documented): it tells whether this state was reused
  local registry = debug.getregistry()
  local reused = registry.process_recycle_mark == true
  registry.process_recycle_mark = true
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
  return reused
end

local reused = 0
for i = 1, 30 do
  if lutra.spawn(visit, i):join() then reused = reused + 1 end
end
assert(reused >= 25, "states were recycled: " .. reused)
-- failed processes' states are recycled (and cleaned) as well
for i = 1, 5 do
  local p = lutra.spawn(function() leaked = "from a failure" error("failing on purpose") end)
  assert(not pcall(p.join, p))
  assert(lutra.spawn(function() return leaked end):join() == nil)
end
print("process_recycle ok", reused)
