-- Seed 002's word count: for each file, the number of distinct upper-cased words
-- (split on non-word characters); report the file with the most. Mapper processes
-- take file names from a channel; mode "serial" does the same in a plain loop.
--   lutra word_count.lua hub|serial MAPPERS FILE...      lua5.4 word_count.lua ...
if not lutra then dofile((arg and arg[0] or ""):match("^(.-)[^/]*$") .. "shim.lua") end

local args = { ... }
local mode, mappers = args[1], math.tointeger(tonumber(args[2])) or 2
local files = { table.unpack(args, 3) }

local function distinct_words(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a"):upper()
  f:close()
  local seen, count = {}, 0
  for word in text:gmatch("[%w_]+") do
    if not seen[word] then
      seen[word] = true
      count = count + 1
    end
  end
  return count
end

-- `distinct_words` comes as an argument: an isolated function crosses to the process.
local function mapper(jobs, results, distinct_words)
  for path in jobs:values() do results:send(path, distinct_words(path)) end
end

local best, best_count, total = nil, -1, 0
local function consider(path, count)
  total = total + count
  if count > best_count or (count == best_count and path < best) then
    best, best_count = path, count
  end
end

if mode == "serial" then
  for _, path in ipairs(files) do consider(path, distinct_words(path)) end
else
  local jobs, results = lutra.channel(#files), lutra.channel(#files)
  local procs = {}
  for i = 1, mappers do procs[i] = lutra.spawn(mapper, jobs, results, distinct_words) end
  for _, path in ipairs(files) do jobs:send(path) end
  jobs:close()
  for _ = 1, #files do consider(results:receive()) end
  for _, p in ipairs(procs) do p:join() end
end
print(string.format("word_count: ok %d files, %d distinct in total, max %d in %s",
  #files, total, best_count, best:match("[^/]*$")))
