-- lutra-args: -w 2
-- C modules from Debian's packages (lua-lpeg, lua-cjson, lua-filesystem, lua-socket)
-- load from the default package.cpath and work inside spawned processes: the `lutra`
-- binary exports the Lua C API, and each process loads what it requires into its own
-- state.
local function uses(name)
  local checks = {
    lpeg = function()
      local lpeg = require "lpeg"
      local digits = lpeg.C(lpeg.R("09") ^ 1)
      local pair = digits * "," * digits
      local a, b = pair:match("12,345")
      assert(a == "12" and b == "345", tostring(a))
      local version = lpeg.version
      return "lpeg " .. (type(version) == "function" and version() or version)
    end,
    cjson = function()
      local cjson = require "cjson"
      local t = cjson.decode(cjson.encode({ n = 3, list = { 1, 2, "x" } }))
      assert(t.n == 3 and t.list[3] == "x")
      return "cjson"
    end,
    lfs = function()
      local lfs = require "lfs"
      assert(lfs.attributes(".", "mode") == "directory")
      assert(type(lfs.currentdir()) == "string")
      local seen = 0
      for _ in lfs.dir(".") do seen = seen + 1 end
      assert(seen > 2)
      return "lfs"
    end,
    socket = function()
      local socket = require "socket"
      -- A connection to oneself: connect() completes through the listen backlog
      -- before accept(), so no call here waits on another process.
      local server = assert(socket.bind("127.0.0.1", 0))
      local _, port = server:getsockname()
      local client = assert(socket.connect("127.0.0.1", port))
      local peer = assert(server:accept())
      assert(client:send("ping\n"))
      assert(peer:receive("*l") == "ping")
      client:close() peer:close() server:close()
      assert(type(socket.gettime()) == "number")
      return "socket"
    end,
  }
  local result = checks[name]()
  -- Loaded into this process's state only.
  assert(package.loaded[name] ~= nil)
  return result
end

assert(package.loaded.lpeg == nil, "nothing is loaded before it is required")
local processes = {}
for _, name in ipairs { "lpeg", "cjson", "lfs", "socket" } do
  -- Twice each: two states load the same library, each its own copy of its table.
  processes[#processes + 1] = lutra.spawn(uses, name)
  processes[#processes + 1] = lutra.spawn(uses, name)
end
for _, p in ipairs(processes) do
  local what = p:join()
  assert(type(what) == "string")
end
assert(package.loaded.lpeg == nil, "a process's require does not reach the main state")
assert(uses("lpeg"):find("^lpeg"))
print("ok")
