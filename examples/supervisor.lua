-- supervisor.lua — a supervisor that restarts a worker when it fails, told by a
-- monitor (`lutra.spawn_monitor`) rather than by joining it.
--
--   producer --jobs--> worker --results--> (buffered)
--                        ^  |
--                        |  | {"down", worker, status, why} in the supervisor's mailbox
--                        |  v
--                     supervisor (the main process): restarts it on "failed"
--
-- The worker squares the numbers it takes and fails on "bad input" (every multiple
-- of `every`); the job it failed on is lost, the others are done by the restarted
-- worker. The supervisor stops when a worker returns (the jobs channel was closed
-- and drained).
--
--   lutra examples/supervisor.lua [jobs] [every]
--
-- Defaults: 20 jobs, every 7th one bad.

local jobs, every = ...
jobs = math.tointeger(tonumber(jobs)) or 20
every = math.tointeger(tonumber(every)) or 7

-- Takes numbers until `work` is closed; fails on a multiple of `every`.
local function worker(work, results, every)
  for n in work:values() do
    if n % every == 0 then error("bad input " .. n, 0) end
    results:send(n * n)
  end
  return "no more work"
end

local work = lutra.channel()
local results = lutra.channel(jobs)
lutra.spawn(function(work, jobs)
  for n = 1, jobs do work:send(n) end
  work:close()
end, work, jobs)

-- Monitored from before its first slice: a worker that fails at once is still told.
local function start()
  return lutra.spawn_monitor(worker, work, results, every)
end

start()
local restarts = 0
while true do
  local down = lutra.receive()
  local status, why = down[3], down[4]
  if status ~= "failed" then break end
  restarts = restarts + 1
  print(("worker failed (%s); restarting it"):format(why:match("[^\n]*")))
  start()
end

local done, sum = 0, 0
while true do
  local ok, square = results:try_receive()
  if not ok then break end
  done, sum = done + 1, sum + square
end
print(("%d restarts; %d of %d jobs done, sum of squares %d"):format(restarts, done, jobs, sum))
