-- first_answer.lua — several workers search; the first answer wins and the others
-- are cancelled (`p:cancel`), wherever they are: in the middle of a range (a
-- CPU-bound loop, stopped at its next preemption) or waiting for the next range.
--
--   feeder --ranges--> worker 1..k --answers--> main: first answer, then cancel all
--
-- The search: the n in [0, limit) whose code (n * 48271 mod 2^31 - 1, a one-to-one
-- map) is the code of `secret`. Each worker takes ranges of 10,000 numbers.
--
--   lutra examples/first_answer.lua [workers] [limit] [secret]
--
-- Defaults: 4 workers, limit 10,000,000, secret 7,654,321.

local workers, limit, secret = ...
workers = math.tointeger(tonumber(workers)) or 4
limit = math.tointeger(tonumber(limit)) or 10000000
secret = math.tointeger(tonumber(secret)) or 7654321

local M = 2147483647
local wanted = secret * 48271 % M
local RANGE = 10000

local ranges = lutra.channel()
local answers = lutra.channel(workers)
local feeder = lutra.spawn(function(ranges, limit, size)
  for first = 0, limit - 1, size do ranges:send(first, math.min(first + size, limit)) end
  ranges:close()
end, ranges, limit, RANGE)

local searchers = {}
for i = 1, workers do
  searchers[i] = lutra.spawn(function(ranges, answers, wanted, M, i)
    for first, last in ranges:values() do
      for n = first, last - 1 do
        if n * 48271 % M == wanted then answers:send(n, i) end
      end
    end
  end, ranges, answers, wanted, M, i)
end

local n, by = answers:receive()
print(("found %d (worker %d)"):format(n, by))
-- Each worker is cancelled in the middle of a range, or waiting for one; a worker
-- that had already run out of ranges returned (its cancel answers false).
local cancelled = 0
for _, p in ipairs(searchers) do
  if p:cancel("answer found") then cancelled = cancelled + 1 end
  local ok, why = p:join()
  assert(ok == nil or why == "cancelled: answer found")
end
feeder:cancel("answer found")
feeder:join()
io.stderr:write(("(cancelled %d of %d workers)\n"):format(cancelled, workers))
print("every worker has stopped")
