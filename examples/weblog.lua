-- weblog.lua — a parallel web-log analyser: C modules in Lutra's processes.
--
--   lutra -w 2 examples/weblog.lua [files [lines]]    processes on 2 cores
--   lua5.4 examples/weblog.lua [files [lines]]        the same program, one core
--
-- One process serves `files` generated access logs (Apache's combined format,
-- `lines` lines each) over HTTP on 127.0.0.1; one process per log fetches it with
-- luasocket's HTTP client, parses every line with an lpeg grammar and counts; the
-- main process merges the counts and prints them as JSON with cjson (keys sorted,
-- so that two runs compare as text). Needs Debian's lua-lpeg, lua-cjson and
-- lua-socket (scripts/install-deps.sh).
--
-- Under plain lua5.4 the processes are coroutines (bench/lua/shim.lua). Sockets
-- never block: a call that would wait pauses the process instead (`pause`), so the
-- server and the fetchers share the workers (or the one core) without holding them.

if not lutra then
  dofile((arg and arg[0] or ""):match("^(.-)[^/]*$") .. "../bench/lua/shim.lua")
end
-- This script's directory: where weblog_lib.lua is, for every process.
local DIR = (arg and arg[0] or ""):match("^(.-)[^/]*$")
if DIR == "" then DIR = "./" end
package.path = DIR .. "?.lua;" .. package.path
local weblog = require "weblog_lib"
local http = require "socket.http"
local socket = require "socket"

local FILES = tonumber(arg[1]) or 8
local LINES = tonumber(arg[2]) or 20000

-- A process's body: requires the library from `dir` into its own state, then runs
-- its function `name`.
local function run(dir, name, ...)
  package.path = dir .. "?.lua;" .. package.path
  return require("weblog_lib")[name](...)
end

local ready = lutra.channel(1)
local server = lutra.spawn(run, DIR, "serve", ready, FILES, LINES)
local port = ready:receive()
local workers = {}
for i = 1, FILES do
  workers[i] = lutra.spawn(run, DIR, "fetch_and_analyse", port, i)
end
local total = weblog.empty()
for i = 1, FILES do
  weblog.merge(total, workers[i]:join())
end
-- Stops the server through its own door.
assert(http.request {
  url = ("http://127.0.0.1:%d/quit"):format(port),
  create = function() return weblog.cooperative(socket.tcp()) end,
})
server:join()
print(weblog.canonical(weblog.report(total, FILES)))
