-- Seed 001, experiment 3: parallel string search. The master (this chunk) starts a
-- coordinator; the coordinator starts S searchers and hands each one file name at a
-- time; a searcher looks for the strings in every line of its file and sends the
-- matching lines back; the coordinator sends it the next file, then consolidates.
--   lutra -w W search.lua S FILE...      lua5.4 search.lua S FILE...
if not lutra then dofile((arg and arg[0] or ""):match("^(.-)[^/]*$") .. "shim.lua") end

local args = { ... }
local searchers = math.tointeger(tonumber(args[1])) or 1
local files = { table.unpack(args, 2) }
local STRINGS = { "ERROR", "timeout after", "user=admin", "/api/v2/orders", "status=503" }

local function searcher(coordinator, strings)
  local me = lutra.self()
  coordinator:send("ready", me)
  while true do
    local path = lutra.receive()
    if path == "stop" then return end
    local matches = {}
    local f = assert(io.open(path, "rb"))
    for line in f:lines() do
      for i = 1, #strings do
        if line:find(strings[i], 1, true) then
          matches[#matches + 1] = line
          break
        end
      end
    end
    f:close()
    coordinator:send("found", me, path, matches)
  end
end

local function coordinator(count, strings, files, searcher)
  local me = lutra.self()
  local procs = {}
  for i = 1, count do procs[i] = lutra.spawn(searcher, me, strings) end
  local next_file, pending, lines, per_file = 1, #files, 0, {}
  local stopped = 0
  while pending > 0 or stopped < count do
    local what, who, path, matches = lutra.receive()
    if what == "found" then
      pending = pending - 1
      lines = lines + #matches
      per_file[#per_file + 1] = #matches
    end
    if next_file <= #files then
      who:send(files[next_file])
      next_file = next_file + 1
    else
      who:send("stop")
      stopped = stopped + 1
    end
  end
  for i = 1, count do procs[i]:join() end
  return lines, per_file
end

local lines, per_file = lutra.spawn(coordinator, searchers, STRINGS, files, searcher):join()
for i = 2, #per_file do assert(per_file[i] == per_file[1], "copies of one file differ") end
print(string.format("search: ok %d matching lines in %d files", lines, #files))
