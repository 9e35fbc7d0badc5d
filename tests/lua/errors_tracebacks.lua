-- Errors name the user's code: a process spawned from a string
-- is a `[string "..."]` chunk, tracebacks show no frame of the runtime's own Lua
-- chunks (`lutra`, `lutra.shared`, `base_xpcall`), and errors raised by library
-- functions point at the line that called them.
local function no_internal_frames(text)
  assert(not text:find("base_x?pcall"), text)
  assert(not text:find("\n\tlutra[.%a]*:%d"), text)
  assert(not text:find("\n\tluaproc:%d"), text)
  assert(not text:find("tail calls"), text)
end

local p = lutra.spawn("local x = 1\nerror('boom')")
local ok, err = pcall(p.join, p)
assert(not ok)
assert(err:find('[string "local x = 1..."]:2: boom', 1, true), err)
assert(err:find("stack traceback:", 1, true), err)
no_internal_frames(err)

local function inner() local t = nil; return t.field end
p = lutra.spawn(function(f) lutra.atomic(function() return f() end) end, inner)
ok, err = pcall(p.join, p)
assert(not ok)
assert(err:find("errors_tracebacks.lua:19: attempt to index a nil value", 1, true), err)
assert(err:find("[C]: in function 'lutra.atomic'", 1, true), err)
no_internal_frames(err)

ok, err = pcall(function() lutra.shared({ setmetatable({}, {}) }) end)
assert(not ok and err:find("^errors_tracebacks.lua:27: "), err)
ok, err = pcall(function() lutra.spawn(coroutine.create(print)) end)
assert(not ok and err:find("^errors_tracebacks.lua:29: "), err)

-- The origin of a process spawned through pcall (a C function) is the user's line.
local _, q = pcall(lutra.spawn, function() error("x") end)
ok, err = pcall(q.join, q)
assert(not ok and err:find("(errors_tracebacks.lua:33)", 1, true), err)
