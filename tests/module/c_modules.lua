-- expect-stdout: ok
-- C modules from Debian's packages load inside processes started from a stock
-- lua5.4 (each process requires them into its own state), with the same paths as
-- under `lutra`.
local lutra = require "lutra"
local function uses(name)
  if name == "lpeg" then
    local lpeg = require "lpeg"
    return (lpeg.C(lpeg.R("09") ^ 1) * "," * lpeg.C(lpeg.R("09") ^ 1)):match("12,345") == "12"
  elseif name == "cjson" then
    local cjson = require "cjson"
    return cjson.decode(cjson.encode({ n = 3 })).n == 3
  elseif name == "lfs" then
    return require("lfs").attributes(".", "mode") == "directory"
  else
    local socket = require "socket"
    local server = assert(socket.bind("127.0.0.1", 0))
    local _, port = server:getsockname()
    local client = assert(socket.connect("127.0.0.1", port))
    local peer = assert(server:accept())
    client:send("ping\n")
    local line = peer:receive("*l")
    client:close() peer:close() server:close()
    return line == "ping"
  end
end
local processes = {}
for _, name in ipairs { "lpeg", "cjson", "lfs", "socket" } do
  processes[name] = lutra.spawn(uses, name)
end
for name, p in pairs(processes) do
  assert(p:join() == true, name)
end
print("ok")
