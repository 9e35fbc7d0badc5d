-- word_count.lua — map/reduce over processes: mapper processes count the words of
-- one document at a time, taken from a shared job channel; the main process merges
-- their counts (reduce), then prints the most frequent words and, as in the Guild
-- demo (seed 002), the document with the most distinct words.
--
--   lutra examples/word_count.lua FILE...           -- count words of these files
--   lutra examples/word_count.lua                   -- or of generated text:
--   lutra examples/word_count.lua --generate [docs] [words_per_doc] [mappers]
--
-- Generated text: 32 documents of 40,000 words drawn from a fixed vocabulary with a
-- seeded generator (each mapper generates its document, so that part runs in
-- parallel too). Mappers default to one per core (at least 2).

local args = { ... }

-- A job is { name = ..., path = file } or { name = ..., seed = s, words = n }.
local jobs = {}
local mappers = math.max(lutra.workers(), 2)
if #args == 0 or args[1] == "--generate" then
  local docs = math.tointeger(tonumber(args[2])) or 32
  local words = math.tointeger(tonumber(args[3])) or 40000
  mappers = math.tointeger(tonumber(args[4])) or mappers
  for i = 1, docs do jobs[i] = { name = "doc" .. i, seed = i, words = words } end
else
  for i, path in ipairs(args) do jobs[i] = { name = path, path = path } end
end

-- A mapper: for each job from `inbox`, counts words (lower-cased runs of letters,
-- digits and apostrophes) and sends the counts to `results`.
local function mapper(inbox, results)
  local vocabulary = {
    "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was",
    "with", "be", "by", "on", "not", "he", "this", "are", "or", "his", "from", "at",
    "which", "but", "have", "an", "had", "they", "you", "were", "their", "one", "all",
    "we", "can", "her", "has", "there", "been", "if", "more", "when", "will", "would",
    "who", "so", "no", "lua", "process", "channel", "worker", "transaction", "core",
  }
  local function generate(seed, words)
    local x, out = seed, {}
    for i = 1, words do
      x = x * 6364136223846793005 + 1442695040888963407
      local r = (x >> 33) % (#vocabulary * 8)
      -- skewed: low indices are far more frequent; some words get a numeric suffix
      local w = vocabulary[r % #vocabulary + 1]
      if r >= #vocabulary * 6 then w = vocabulary[(r % 7) + 1] end
      if r % 31 == 0 then w = w .. ((x >> 45) % 5000) end
      out[i] = w
    end
    return table.concat(out, " ")
  end
  local done = 0
  for job in inbox:values() do
    local text
    if job.path then
      local f, err = io.open(job.path, "rb")
      if not f then error(err) end
      text = f:read("a")
      f:close()
    else
      text = generate(job.seed, job.words)
    end
    local counts, total, distinct = {}, 0, 0
    for word in text:lower():gmatch("[%w']+") do
      local c = counts[word]
      if not c then distinct = distinct + 1 end
      counts[word] = (c or 0) + 1
      total = total + 1
    end
    results:send(job.name, total, distinct, counts)
    done = done + 1
  end
  return done
end

print(string.format("word_count.lua: %d documents, %d mappers", #jobs, mappers))
local inbox, results = lutra.channel(#jobs), lutra.channel(#jobs)
local procs = {}
for i = 1, mappers do procs[i] = lutra.spawn(mapper, inbox, results) end
for _, job in ipairs(jobs) do inbox:send(job) end
inbox:close() -- mappers finish their loop once the jobs are drained

-- Reduce.
local totals, words = {}, 0
local best_name, best_distinct = nil, -1
for _ = 1, #jobs do
  local name, total, distinct, counts = results:receive()
  words = words + total
  if distinct > best_distinct or (distinct == best_distinct and name < best_name) then
    best_name, best_distinct = name, distinct
  end
  for word, c in pairs(counts) do totals[word] = (totals[word] or 0) + c end
end
for i = 1, mappers do procs[i]:join() end

local ranked, distinct = {}, 0
for word, c in pairs(totals) do
  distinct = distinct + 1
  ranked[distinct] = { word = word, count = c }
end
table.sort(ranked, function(a, b)
  if a.count ~= b.count then return a.count > b.count end
  return a.word < b.word
end)

print(string.format("%d words, %d distinct", words, distinct))
for i = 1, math.min(10, #ranked) do
  print(string.format("  %2d. %-12s %d", i, ranked[i].word, ranked[i].count))
end
if best_name then
  print(string.format("most distinct words: %s (%d)", best_name, best_distinct))
end
