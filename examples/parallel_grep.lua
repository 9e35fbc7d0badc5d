-- parallel_grep.lua — search a Lua pattern in many files at once: searcher
-- processes take file names from a channel and send back each file's matches; the
-- main process prints them as file:line: text, in the order the files were given
-- (so the output is the same on 1 core or 64).
--
--   lutra examples/parallel_grep.lua PATTERN FILE...
--   lutra examples/parallel_grep.lua --plain TEXT FILE...     -- no pattern magic
--   lutra examples/parallel_grep.lua --demo [files] [lines]
--
-- The demo writes a few generated log files to temporary names (4 files of 50,000
-- lines by default), searches them for "ERROR.*full", prints the matches and
-- removes the files. Searchers: one per core (at least 2).

local args = { ... }

-- Writes a log file of `lines` lines; about one line in 2,000 is an error about disks.
local function write_log(path, lines, seed)
  local levels = { "INFO", "INFO", "INFO", "DEBUG", "WARN" }
  local subjects = { "request served", "cache hit", "cache miss", "user login", "disk check ok" }
  local f = assert(io.open(path, "w"))
  local x = seed
  for i = 1, lines do
    x = x * 6364136223846793005 + 1442695040888963407
    local r = (x >> 33) % 10000
    if r < 5 then
      f:write(string.format("%06d ERROR disk /dev/sd%s full (%d%% used)\n", i, string.char(97 + r), 90 + r))
    else
      f:write(string.format("%06d %s %s in %d ms\n", i, levels[r % #levels + 1], subjects[r % #subjects + 1], r % 250))
    end
  end
  f:close()
end

local plain, pattern, files, demo = false, nil, {}, false
if args[1] == nil or args[1] == "--demo" then
  demo = true
  pattern = "ERROR.*full"
  local count = math.tointeger(tonumber(args[2])) or 4
  local lines = math.tointeger(tonumber(args[3])) or 50000
  for i = 1, count do
    files[i] = os.tmpname()
    write_log(files[i], lines, i)
  end
else
  if args[1] == "--plain" then
    plain = true
    table.remove(args, 1)
  end
  pattern = args[1]
  for i = 2, #args do files[#files + 1] = args[i] end
  if not pattern or #files == 0 then
    io.stderr:write("usage: lutra parallel_grep.lua [--plain] PATTERN FILE...\n")
    os.exit(2)
  end
end

-- A searcher: for each (index, path) from `inbox`, sends (index, matches) to
-- `results`, matches being a list of { line_number, text }, or (index, nil, error).
local function searcher(inbox, results, pattern, plain)
  for index, path in inbox:values() do
    local f, err = io.open(path, "rb")
    if not f then
      results:send(index, nil, err)
    else
      local matches, number = {}, 0
      for line in f:lines() do
        number = number + 1
        if line:find(pattern, 1, plain) then
          matches[#matches + 1] = { number, line }
        end
      end
      f:close()
      results:send(index, matches)
    end
  end
end

local searchers = math.min(math.max(lutra.workers(), 2), #files)
local inbox, results = lutra.channel(#files), lutra.channel(#files)
for _ = 1, searchers do lutra.spawn(searcher, inbox, results, pattern, plain) end
for i, path in ipairs(files) do inbox:send(i, path) end
inbox:close()

local found, failed = {}, false
for _ = 1, #files do
  local index, matches, err = results:receive()
  found[index] = matches or err
end
local total = 0
for i, path in ipairs(files) do
  local matches = found[i]
  if type(matches) == "string" then
    io.stderr:write("parallel_grep: " .. matches .. "\n")
    failed = true
  else
    local label = demo and ("log" .. i) or path
    for _, m in ipairs(matches) do
      print(string.format("%s:%d: %s", label, m[1], m[2]))
    end
    total = total + #matches
  end
end
print(string.format("%d matching lines in %d files (%d searchers)", total, #files, searchers))

if demo then
  for _, path in ipairs(files) do os.remove(path) end
end
if failed then os.exit(1) end
